// `dtrain runs DIR`: the training runs (model_dirs) under DIR side by side —
// status, steps, wall time, model hash, last and best eval metrics and the
// options that differ between them; `--compare A B` shows two in full.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace dtrain::cli {

struct RunsArgs {
  std::string dir;                   // positional: where the runs are
  bool json = false;                 // --json: one JSON array on stdout
  std::vector<std::string> compare;  // --compare A B: two runs by name (their path under DIR)
};

void declare_runs(CLI::App& sub, RunsArgs& args);

// Prints the table (or JSON, or the comparison) on stdout. Exit codes: 0, or
// 2 when DIR is not a directory or a --compare name is not a run under it.
int run_runs(const RunsArgs& args);

}  // namespace dtrain::cli
