// The `dtrain data` subcommand group: fetch, convert, inspect, sentencepiece and bench.
#pragma once

#include <CLI/CLI.hpp>

namespace dtrain::cli {

// Adds `fetch`, `convert`, `inspect`, `sentencepiece` and `bench` under the `data` subcommand. They run
// from CLI11 callbacks during app.parse() and store their exit code (0 ok,
// 1 download failed, 2 usage or job error, 3 data error) in `exit_code`, which must
// outlive the parse.
void add_data_subcommands(CLI::App& data, int& exit_code);

}  // namespace dtrain::cli
