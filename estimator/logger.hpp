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
  double eta_seconds = -1;         // time left to max_steps; < 0: not known yet
};

// What the live line shows (estimator/hooks/progress_hook.hpp).
struct ProgressLine {
  int64_t step = 0, max_steps = 0;
  double examples_per_sec = 0, loss = 0;
  double eta_seconds = -1;  // < 0: not known yet
};

// "1h02m", "3m05s", "42s"; "--" when unknown (< 0).
std::string format_duration(double seconds);

class Logger {
 public:
  Logger(LogFormat format, std::FILE* out);
  void info(const std::string& message);
  void warning(const std::string& message);
  void step(const StepLog& s);
  void eval(int64_t step, const std::vector<std::pair<std::string, double>>& metrics, const std::string& where);
  // What start-up is doing while it takes time ("loading data.train"): the
  // live line on a terminal, an event in json; nothing in plain logs.
  void status(const std::string& what);
  // Redraws the live line (a terminal only; nothing otherwise).
  void progress(const ProgressLine& p);
  void end_progress();  // clears the live line before other output
  // --log-format json only: one line {"time", "event": event, fields...}.
  void json_event(const std::string& event, const nlohmann::json& fields);
  bool is_json() const { return json_; }
  bool is_live() const { return live_; }

 private:
  void line(const std::string& text);  // a line above the live line, which is drawn again below it
  std::FILE* out_;
  bool json_ = false;
  bool live_ = false;          // terminal: one live line under the others
  std::string live_text_;      // the live line as last drawn ("" = none)
};

}  // namespace dtrain
