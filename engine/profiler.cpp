// Step-phase profiler: event recording and the Chrome trace writer.
#include "engine/profiler.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "engine/io/file_util.hpp"

namespace dtrain {

Profiler::Profiler() : origin_(Clock::now()) {}

int Profiler::tid_locked() {
  const auto [it, inserted] = tids_.try_emplace(std::this_thread::get_id(), static_cast<int>(names_.size()));
  if (inserted) names_.push_back("");
  return it->second;
}

void Profiler::name_thread(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  std::string& n = names_[static_cast<size_t>(tid_locked())];
  if (n.empty()) n = name;
}

void Profiler::set_step(int64_t step) {
  std::lock_guard<std::mutex> lock(mu_);
  step_ = step;
}

void Profiler::add(const char* phase, const std::string& detail, Clock::time_point begin, Clock::time_point end) {
  Event e;
  e.phase = phase;
  e.name = detail.empty() ? e.phase : e.phase + " " + detail;
  e.begin_us = std::chrono::duration<double, std::micro>(begin - origin_).count();
  e.dur_us = std::chrono::duration<double, std::micro>(end - begin).count();
  std::lock_guard<std::mutex> lock(mu_);
  e.tid = tid_locked();
  e.step = step_;
  events_.push_back(std::move(e));
}

std::vector<Profiler::Event> Profiler::events() const {
  std::lock_guard<std::mutex> lock(mu_);
  return events_;
}

std::vector<std::string> Profiler::thread_names() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> out = names_;
  for (size_t t = 0; t < out.size(); ++t) {
    if (out[t].empty()) out[t] = fmt::format("thread {}", t);
  }
  return out;
}

Status Profiler::write_chrome_trace(const std::string& path, const std::string& process_name, int pid) const {
  using nlohmann::json;
  json events = json::array();
  events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", pid}, {"tid", 0},
                    {"args", {{"name", process_name}}}});
  const std::vector<std::string> names = thread_names();
  for (size_t t = 0; t < names.size(); ++t) {
    events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", pid}, {"tid", t}, {"args", {{"name", names[t]}}}});
    // Perfetto orders tracks by this: main first, then replicas, then the rest.
    events.push_back({{"name", "thread_sort_index"}, {"ph", "M"}, {"pid", pid}, {"tid", t},
                      {"args", {{"sort_index", t}}}});
  }
  for (const Event& e : this->events()) {
    events.push_back({{"name", e.name}, {"cat", e.phase}, {"ph", "X"}, {"ts", e.begin_us}, {"dur", e.dur_us},
                      {"pid", pid}, {"tid", e.tid}, {"args", {{"step", e.step}}}});
  }
  const json trace = {{"traceEvents", std::move(events)}, {"displayTimeUnit", "ms"}};
  const std::string text = trace.dump() + "\n";
  return io::write_file_atomic(path, {text});
}

}  // namespace dtrain
