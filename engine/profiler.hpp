// Step-phase profiler (run.profile): timed events on one track per thread,
// written as a Chrome trace (Trace Event Format, read by ui.perfetto.dev and
// chrome://tracing). Code holds a `Profiler*` that is null when profiling is
// off, so the whole cost then is one null check per scope.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "engine/base/status.hpp"

namespace dtrain {

class Profiler {
 public:
  using Clock = std::chrono::steady_clock;
  struct Event {
    std::string phase;  // "step", "input", "sync", "compute", "forward", "loss", "backward", "all-reduce",
                        // "ps", "optimizer", "summaries", "checkpoint", "eval"
    std::string name;   // shown in the trace: the phase, or "forward conv2d", "all-reduce bucket 0 (1.00 MiB)"
    int tid = 0;        // the recording thread's track
    int64_t step = -1;  // the global step being computed (set by the caller of set_step)
    double begin_us = 0, dur_us = 0;  // microseconds since the profiler was made (steady clock)
  };

  Profiler();
  // Names the calling thread's track unless it has a name already
  // ("main", "replica 1", "all-reduce"). Thread-safe.
  void name_thread(const std::string& name);
  // The step that events recorded from now on belong to. Thread-safe; set
  // between steps by the thread that drives them.
  void set_step(int64_t step);
  // Records [begin, end) on the calling thread's track. Thread-safe.
  void add(const char* phase, const std::string& detail, Clock::time_point begin, Clock::time_point end);

  std::vector<Event> events() const;
  // Track names indexed by tid ("thread N" for a thread never named).
  std::vector<std::string> thread_names() const;
  // Writes every event as a JSON object {"traceEvents": [...], "displayTimeUnit": "ms"}:
  // "X" events (name, cat = phase, ph, ts, dur in microseconds, pid, tid,
  // args.step) and "M" thread_name / process_name metadata, atomically.
  Status write_chrome_trace(const std::string& path, const std::string& process_name, int pid) const;

 private:
  int tid_locked();  // REQUIRES: mu_ held

  const Clock::time_point origin_;
  mutable std::mutex mu_;
  std::map<std::thread::id, int> tids_;     // GUARDED_BY(mu_)
  std::vector<std::string> names_;          // GUARDED_BY(mu_), by tid
  std::vector<Event> events_;               // GUARDED_BY(mu_)
  int64_t step_ = -1;                       // GUARDED_BY(mu_)
};

// Records its own lifetime as one event of `phase` (named "phase detail")
// on the calling thread's track; does nothing when `profiler` is null.
class ProfileScope {
 public:
  ProfileScope(Profiler* profiler, const char* phase, std::string detail = {})
      : profiler_(profiler), phase_(phase), detail_(std::move(detail)) {
    if (profiler_ != nullptr) begin_ = Profiler::Clock::now();
  }
  ~ProfileScope() {
    if (profiler_ != nullptr) profiler_->add(phase_, detail_, begin_, Profiler::Clock::now());
  }
  ProfileScope(const ProfileScope&) = delete;
  ProfileScope& operator=(const ProfileScope&) = delete;

 private:
  Profiler* profiler_;
  const char* phase_;
  std::string detail_;
  Profiler::Clock::time_point begin_;
};

}  // namespace dtrain
