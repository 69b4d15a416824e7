// The table of dtrain subcommands: name, one-line help, how to declare its
// arguments, and what runs it. main() only dispatches through this table.
#pragma once

#include <CLI/CLI.hpp>

#include <optional>
#include <string>
#include <vector>

#include "cli/launch_command.hpp"
#include "cli/runs_command.hpp"
#include "strategies/task_server.hpp"

namespace dtrain::cli {

// Parsed arguments of every subcommand (each uses the fields it declares).
struct Args {
  std::vector<std::string> jobs;        // job files (validate takes several)
  std::vector<std::string> overrides;   // --set key=value
  std::string model_dir;                // --model-dir
  std::string log_format = "auto";      // --log-format
  int threads = 0;                      // --threads; 0 = not given
  std::string checkpoint;               // --checkpoint / inspect's positional
  std::string input, output;            // predict
  std::string format = "onnx", out;     // export
  bool no_eval = false;                 // train: skip evaluation
  bool graph = false;                   // validate: print the expanded model graph
  int data_exit = 0;                    // data *: set by its subcommand callbacks
  LaunchArgs launch;                    // launch: tasks (its train options are the fields above)
  std::string remote_cluster;           // train --remote-cluster: [type=]host:port,...
  ServerArgs server;                    // server
  RunsArgs runs;                        // runs
};

struct Command {
  const char* name;
  const char* help;
  void (*declare)(CLI::App& sub, Args& args);
  int (*run)(const Args& args);  // returns the exit code
};

const std::vector<Command>& commands();

}  // namespace dtrain::cli
