// Log formatting for the estimator.
#include "estimator/logger.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <chrono>

namespace dtrain {
namespace {
double now_secs() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}
}  // namespace

Logger::Logger(LogFormat format, std::FILE* out) : out_(out) {
  json_ = format == LogFormat::kJson;
  live_ = format == LogFormat::kAuto && isatty(fileno(out)) != 0;
}

void Logger::end_progress() {
  if (progress_open_) {
    std::fputc('\n', out_);
    progress_open_ = false;
  }
}

void Logger::info(const std::string& message) {
  end_progress();
  if (json_) {
    std::fprintf(out_, "%s\n", nlohmann::json{{"time", now_secs()}, {"event", "info"}, {"message", message}}.dump().c_str());
  } else {
    std::fprintf(out_, "%s\n", message.c_str());
  }
  std::fflush(out_);
}

void Logger::warning(const std::string& message) {
  end_progress();
  if (json_) {
    std::fprintf(out_, "%s\n",
                 nlohmann::json{{"time", now_secs()}, {"event", "warning"}, {"message", message}}.dump().c_str());
  } else {
    std::fprintf(out_, "warning: %s\n", message.c_str());
  }
  std::fflush(out_);
}

void Logger::step(const StepLog& s) {
  if (json_) {
    nlohmann::json j{{"time", now_secs()},          {"event", "step"},
                     {"step", s.step},              {"max_steps", s.max_steps},
                     {"loss", s.loss},              {"learning_rate", s.learning_rate},
                     {"steps_per_sec", s.steps_per_sec}, {"examples_per_sec", s.examples_per_sec},
                     {"input_wait_fraction", s.input_wait_fraction}};
    std::fprintf(out_, "%s\n", j.dump().c_str());
  } else {
    const std::string line =
        fmt::format("step {}/{}  loss {:.4f}  lr {:.3g}  {:.1f} steps/s  {:.0f} examples/s  input wait {:.1f}%",
                    s.step, s.max_steps, s.loss, s.learning_rate, s.steps_per_sec, s.examples_per_sec,
                    100.0 * s.input_wait_fraction);
    if (live_) {
      std::fprintf(out_, "\r\033[K%s", line.c_str());
      progress_open_ = true;
    } else {
      std::fprintf(out_, "%s\n", line.c_str());
    }
  }
  std::fflush(out_);
}

void Logger::eval(int64_t step, const std::vector<std::pair<std::string, double>>& metrics,
                  const std::string& where) {
  end_progress();
  if (json_) {
    nlohmann::json j{{"time", now_secs()}, {"event", "eval"}, {"step", step}, {"checkpoint", where}};
    for (const auto& [k, v] : metrics) j["metrics"][k] = v;
    std::fprintf(out_, "%s\n", j.dump().c_str());
  } else {
    std::string line = fmt::format("eval at step {}:", step);
    for (const auto& [k, v] : metrics) line += fmt::format("  {} {:.4f}", k, v);
    std::fprintf(out_, "%s\n", line.c_str());
  }
  std::fflush(out_);
}

void Logger::json_event(const std::string& event, const nlohmann::json& fields) {
  if (!json_) return;
  end_progress();
  nlohmann::json j{{"time", now_secs()}, {"event", event}};
  j.update(fields);
  std::fprintf(out_, "%s\n", j.dump().c_str());
  std::fflush(out_);
}

}  // namespace dtrain
