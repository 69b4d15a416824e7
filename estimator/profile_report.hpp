// run.profile's window in the training loop: opens a Profiler for the steps
// of the window, then writes the Chrome trace and the per-phase time table.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/base/job_spec.hpp"
#include "engine/profiler.hpp"
#include "engine/base/status.hpp"

namespace dtrain {

// The per-phase table of a window's events. The step span is the main
// thread's "step" event: from asking the input for the batch to the end of
// the step's hooks (summaries, checkpoint, eval). Its top-level phases are
// input, sync (multi-worker: agreeing on the end of input and on stop
// signals), compute (the strategy's train_step), summaries, checkpoint and eval;
// compute is split into forward, loss, backward, in-process all-reduce,
// parameter_server's pull and push, and optimizer, where phases run by every replica thread at once count their
// mean over the replicas, and "other compute" is the rest (hand-off to the
// replica threads, waiting for the cross-worker all-reduce). The
// cross-worker all-reduce runs on its own thread, overlapped with backward,
// and is listed after the table with its share. Lines: phase, total ms,
// ms/step, share of step (%).
std::vector<std::string> profile_table(const std::vector<Profiler::Event>& events);

class ProfileWindow {
 public:
  // `spec` null: never profiles. `trace_dir`: where the trace is written
  // (model_dir/profile); empty for a task that writes none (not the chief).
  ProfileWindow(const std::optional<ProfileSpec>& spec, std::string trace_dir);
  // The profiler for `step` (0-based, the step about to be computed): opens
  // the window at its first step inside [start_step, start_step + steps);
  // null outside the window. The profiler lives as long as this object.
  Profiler* begin_step(int64_t step);
  // After the step that began at `step`: true when the window is open and
  // `step` was its last step, or `force` (training ends or stops).
  bool should_close(int64_t step, bool force) const;
  // Writes trace-<first>-<end>.json (end: the step after the last profiled)
  // and returns the table's lines with a header naming the file. REQUIRES: open.
  Result<std::vector<std::string>> close(int64_t next_step);
  bool open() const { return profiler_ != nullptr && !done_; }

 private:
  std::optional<ProfileSpec> spec_;
  std::string trace_dir_;
  std::unique_ptr<Profiler> profiler_;
  int64_t first_step_ = -1;
  bool done_ = false;  // the window was written; never reopens
};

}  // namespace dtrain
