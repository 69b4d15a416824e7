// Log formatting for the estimator.
#include "estimator/logger.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <chrono>
#include <cmath>

namespace dtrain {
namespace {
double now_secs() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

void emit_json(std::FILE* out, const nlohmann::json& j) { std::fprintf(out, "%s\n", j.dump().c_str()); }
}  // namespace

std::string format_duration(double seconds) {
  if (!(seconds >= 0) || !std::isfinite(seconds)) return "--";
  const auto s = static_cast<int64_t>(std::llround(seconds));
  if (s >= 3600) return fmt::format("{}h{:02}m", s / 3600, s % 3600 / 60);
  if (s >= 60) return fmt::format("{}m{:02}s", s / 60, s % 60);
  return fmt::format("{}s", s);
}

Logger::Logger(LogFormat format, std::FILE* out) : out_(out) {
  json_ = format == LogFormat::kJson;
  live_ = format == LogFormat::kAuto && isatty(fileno(out)) != 0;
}

void Logger::end_progress() {
  if (!live_text_.empty()) {
    std::fputs("\r\033[K", out_);
    std::fflush(out_);
    live_text_.clear();
  }
}

void Logger::line(const std::string& text) {
  if (live_ && !live_text_.empty()) {
    std::fprintf(out_, "\r\033[K%s\n%s", text.c_str(), live_text_.c_str());
  } else {
    std::fprintf(out_, "%s\n", text.c_str());
  }
  std::fflush(out_);
}

void Logger::info(const std::string& message) {
  if (json_) {
    emit_json(out_, {{"time", now_secs()}, {"event", "info"}, {"message", message}});
    std::fflush(out_);
    return;
  }
  line(message);
}

void Logger::warning(const std::string& message) {
  if (json_) {
    emit_json(out_, {{"time", now_secs()}, {"event", "warning"}, {"message", message}});
    std::fflush(out_);
    return;
  }
  line("warning: " + message);
}

void Logger::status(const std::string& what) {
  if (json_) {
    emit_json(out_, {{"time", now_secs()}, {"event", "status"}, {"message", what}});
  } else if (live_) {
    live_text_ = what + " ...";
    std::fprintf(out_, "\r\033[K%s", live_text_.c_str());
  }  // plain: logs keep their lines (an error stays the one line it was)
  std::fflush(out_);
}

void Logger::progress(const ProgressLine& p) {
  if (!live_) return;
  const double percent = p.max_steps > 0 ? 100.0 * static_cast<double>(p.step) / static_cast<double>(p.max_steps) : 0;
  live_text_ = fmt::format("step {}/{}  {:.0f}%  {:.0f} examples/s  loss {:.4f}  ETA {}", p.step, p.max_steps,
                           std::floor(percent), p.examples_per_sec, p.loss, format_duration(p.eta_seconds));
  std::fprintf(out_, "\r\033[K%s", live_text_.c_str());
  std::fflush(out_);
}

void Logger::step(const StepLog& s) {
  if (json_) {
    nlohmann::json j{{"time", now_secs()},          {"event", "step"},
                     {"step", s.step},              {"max_steps", s.max_steps},
                     {"loss", s.loss},              {"learning_rate", s.learning_rate},
                     {"steps_per_sec", s.steps_per_sec}, {"examples_per_sec", s.examples_per_sec},
                     {"input_wait_fraction", s.input_wait_fraction}};
    j["eta_s"] = s.eta_seconds >= 0 ? nlohmann::json(s.eta_seconds) : nlohmann::json(nullptr);
    emit_json(out_, j);
    std::fflush(out_);
    return;
  }
  line(fmt::format("step {}/{}  loss {:.4f}  lr {:.3g}  {:.1f} steps/s  {:.0f} examples/s  input wait {:.1f}%  ETA {}",
                   s.step, s.max_steps, s.loss, s.learning_rate, s.steps_per_sec, s.examples_per_sec,
                   100.0 * s.input_wait_fraction, format_duration(s.eta_seconds)));
}

void Logger::eval(int64_t step, const std::vector<std::pair<std::string, double>>& metrics,
                  const std::string& where) {
  if (json_) {
    nlohmann::json j{{"time", now_secs()}, {"event", "eval"}, {"step", step}, {"checkpoint", where}};
    for (const auto& [k, v] : metrics) j["metrics"][k] = v;
    emit_json(out_, j);
    std::fflush(out_);
    return;
  }
  std::string text = fmt::format("eval at step {}:", step);
  for (const auto& [k, v] : metrics) text += fmt::format("  {} {:.4f}", k, v);
  line(text);
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
