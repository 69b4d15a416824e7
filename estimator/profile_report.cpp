// run.profile: the window's lifetime, the trace file and the per-phase table.
#include "estimator/profile_report.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <map>
#include <set>

namespace dtrain {

std::vector<std::string> profile_table(const std::vector<Profiler::Event>& events) {
  // The main thread records the step spans; replica threads record forward.
  int main_tid = -1;
  int64_t steps = 0;
  double step_us = 0;
  std::set<int> replicas;
  for (const Profiler::Event& e : events) {
    if (e.phase == "step") {
      main_tid = e.tid;
      ++steps;
      step_us += e.dur_us;
    }
    if (e.phase == "forward") replicas.insert(e.tid);
  }
  if (steps == 0) return {"no step was profiled"};
  const double r = replicas.empty() ? 1.0 : static_cast<double>(replicas.size());
  std::map<std::string, double> us;  // phase -> microseconds (replica phases: mean over the replicas)
  double cross_us = 0;              // the communication thread's all-reduce
  for (const Profiler::Event& e : events) {
    if (e.phase == "step") continue;
    if (e.tid == main_tid || replicas.count(e.tid)) {
      us[e.phase] += replicas.count(e.tid) ? e.dur_us / r : e.dur_us;
    } else if (e.phase == "all-reduce") {
      cross_us += e.dur_us;
    }
  }
  const double in_compute =
      us["forward"] + us["loss"] + us["backward"] + us["all-reduce"] + us["ps"] + us["optimizer"];
  const double top = us["input"] + us["sync"] + us["compute"] + us["summaries"] + us["checkpoint"] + us["eval"];
  const std::pair<const char*, double> rows[] = {
      {"input wait", us["input"]},
      {"worker sync", us["sync"]},
      {"forward", us["forward"]},
      {"loss", us["loss"]},
      {"backward", us["backward"]},
      {"all-reduce (in process)", us["all-reduce"]},
      {"ps pull and push", us["ps"]},
      {"optimizer", us["optimizer"]},
      {"other compute", us["compute"] - in_compute},
      {"summaries", us["summaries"]},
      {"checkpoint", us["checkpoint"]},
      {"eval", us["eval"]},
      {"other", step_us - top},
      {"step", step_us},
  };
  std::vector<std::string> lines;
  lines.push_back(fmt::format("{:<26} {:>10} {:>9} {:>7}", "phase", "total ms", "ms/step", "share"));
  const double n = static_cast<double>(steps);
  for (const auto& [name, v] : rows) {
    lines.push_back(
        fmt::format("{:<26} {:>10.2f} {:>9.3f} {:>6.1f}%", name, v / 1e3, v / 1e3 / n, 100.0 * v / step_us));
  }
  if (cross_us > 0) {
    lines.push_back(fmt::format("{:<26} {:>10.2f} {:>9.3f} {:>6.1f}%  (communication thread, overlapped with "
                                "backward)",
                                "all-reduce across workers", cross_us / 1e3, cross_us / 1e3 / n,
                                100.0 * cross_us / step_us));
  }
  if (replicas.size() > 1) {
    lines.push_back(fmt::format("forward, loss, backward, all-reduce (in process) and optimizer: mean over {} replica "
                                "threads",
                                replicas.size()));
  }
  return lines;
}

ProfileWindow::ProfileWindow(const std::optional<ProfileSpec>& spec, std::string trace_dir)
    : spec_(spec), trace_dir_(std::move(trace_dir)) {}

Profiler* ProfileWindow::begin_step(int64_t step) {
  if (!spec_ || done_ || step < spec_->start_step || step >= spec_->start_step + spec_->steps) return nullptr;
  if (!profiler_) {
    profiler_ = std::make_unique<Profiler>();
    profiler_->name_thread("main");
    first_step_ = step;
  }
  profiler_->set_step(step);
  return profiler_.get();
}

bool ProfileWindow::should_close(int64_t step, bool force) const {
  return open() && (force || step + 1 >= spec_->start_step + spec_->steps);
}

Result<std::vector<std::string>> ProfileWindow::close(int64_t next_step) {
  std::vector<std::string> lines;
  const std::vector<Profiler::Event> events = profiler_->events();
  int64_t steps = 0;
  for (const Profiler::Event& e : events) steps += e.phase == "step";
  if (!trace_dir_.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(trace_dir_, ec);
    if (ec) return runtime_error(fmt::format("cannot create {}: {}", trace_dir_, ec.message()));
    const std::string path = fmt::format("{}/trace-{}-{}.json", trace_dir_, first_step_, next_step);
    if (Status s = profiler_->write_chrome_trace(path, "dtrain train", 1); !s) return s.error();
    lines.push_back(fmt::format("profile of steps {}..{} ({} steps): {} (open it in ui.perfetto.dev or "
                                "chrome://tracing)",
                                first_step_, next_step - 1, steps, path));
  } else {
    lines.push_back(fmt::format("profile of steps {}..{} ({} steps) on this task (the chief writes the trace)",
                                first_step_, next_step - 1, steps));
  }
  for (std::string& l : profile_table(events)) lines.push_back(std::move(l));
  // The profiler stays alive with the window: a thread that took the pointer
  // before it was withdrawn (the input's prefetch thread) may still record.
  done_ = true;
  return lines;
}

}  // namespace dtrain
