// `dtrain data bench JOB`: its command-line arguments and the function that
// runs it (wired into the `data` subcommands by cli/data_commands.cpp).
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace dtrain::cli {

struct BenchCommandOptions {
  std::string job;                      // positional: the job file
  std::vector<std::string> overrides;   // --set key=value
  std::string split = "train";          // --split train|eval
  int64_t batches = 20;                 // --batches N (0: until the input ends)
  int64_t warmup = 2;                   // --warmup N
  int threads = 0;                      // --threads N; 0 = not given
  bool json = false;                    // --json: one JSON object on stdout
};

// Declares the positional and options above on `sub` (the `bench` subcommand).
void declare_data_bench(CLI::App& sub, BenchCommandOptions& options);

// Builds the job's input as `dtrain train` (or evaluate, --split eval) would,
// reads it without training (Estimator::bench_input) and prints examples/s,
// batches/s, MiB/s of features, the input's description and this process's
// peak RSS (VmHWM). Errors: one "dtrain: ..." line on stderr; returns the exit
// code (0 ok, 2 job or usage error, 3 data error).
int run_data_bench(const BenchCommandOptions& options);

}  // namespace dtrain::cli
