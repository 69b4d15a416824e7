// Progress output of train/evaluate: a live progress line on a terminal,
// plain lines when not a terminal, JSON lines with --log-format json.
// Everything goes to one FILE (stderr by default); not thread-safe.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace dtrain {

enum class LogFormat { kAuto, kPlain, kJson };

struct StepLog {
  int64_t step = 0, max_steps = 0;
  double loss = 0, learning_rate = 0, steps_per_sec = 0, examples_per_sec = 0;
  double input_wait_fraction = 0;  // share of the window's wall time spent waiting for the next batch
};

class Logger {
 public:
  Logger(LogFormat format, std::FILE* out);
  void info(const std::string& message);
  void warning(const std::string& message);
  void step(const StepLog& s);
  void eval(int64_t step, const std::vector<std::pair<std::string, double>>& metrics, const std::string& where);
  void end_progress();  // ends a live progress line before other output
  // --log-format json only: one line {"time", "event": event, fields...}.
  void json_event(const std::string& event, const nlohmann::json& fields);
  bool is_json() const { return json_; }

 private:
  std::FILE* out_;
  bool json_ = false;
  bool live_ = false;          // terminal: rewrite one line
  bool progress_open_ = false;
};

}  // namespace dtrain
