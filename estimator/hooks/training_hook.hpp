// The training loop's hooks (estimator/train.cpp): each behaviour around a
// step is one small class, run from one ordered list, in the shape of
// TensorFlow's SessionRunHook and Lightning's callbacks. New behaviour is a
// new hook, not another branch in the loop.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/profiler.hpp"
#include "engine/base/status.hpp"
#include "strategies/strategy.hpp"

namespace dtrain {

// Seconds from `t` to now on the steady clock (the hooks' windows and throttles).
inline double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// One step as the hooks see it. The loop fills the first block; hooks fill
// the second, read by the hooks after them and by the loop.
struct StepState {
  int64_t step_before = 0;  // the global step before this step (0-based: the step computed)
  int64_t step = 0;         // after it: step_before + 1, or more under asynchronous parameter servers
  int64_t max_steps = 0;    // run.max_steps
  float learning_rate = 0;
  const Batch* batch = nullptr;    // the step's batch (this process's), for after_step; null before it
  StepOutput out;                  // the step's sums over its examples
  double loss = 0;                 // out.loss_sum / out.examples
  double input_wait_seconds = 0;   // blocked in the input's next() for this batch
  double comm_seconds = 0, comm_exposed_seconds = 0;  // cross-worker communication (Strategy::last_comm_seconds)
  Profiler* profiler = nullptr;    // set by ProfileHook::before_step when run.profile traces this step
  double eta_seconds = -1;         // ProgressHook: time left to max_steps (< 0: not known yet)

  int stop_signal = 0;             // StopSignalHook: this task's signal, or -1 when only another task's
  bool early_stop = false;         // StopSignalHook (the evaluator's decision) or CheckpointHook (this run's)
  std::string early_stop_reason;

  bool last() const { return step >= max_steps; }
  // Whether this step crossed a multiple of `every` (> 0): steps advance by
  // one, except under asynchronous parameter servers, where every worker's
  // update counts. False for every <= 0.
  bool crossed(int64_t every) const { return every > 0 && step_before / every != step / every; }
  // Training ends after this step, on its own terms or not.
  bool ends() const { return last() || stop_signal != 0 || early_stop; }
};

class TrainingHook {
 public:
  virtual ~TrainingHook() = default;
  // The profile phase its after_step counts as (run.profile); null: its own
  // scopes, if any. Consecutive hooks of one phase share one span.
  virtual const char* phase() const { return nullptr; }
  // Before the step asks the input for its batch, in the list's order.
  virtual Status before_step(StepState& s) {
    (void)s;
    return Status::Ok();
  }
  // After the step, in the list's order; an error ends training with it.
  virtual Status after_step(StepState& s) {
    (void)s;
    return Status::Ok();
  }
  // Training reached its end (max_steps, the end of the input, an early
  // stop) at `step`; not called after a stop signal or an error. In reverse
  // order of the list, as the hooks nest around the step.
  virtual Status end(int64_t step) {
    (void)step;
    return Status::Ok();
  }
};

using HookList = std::vector<std::unique_ptr<TrainingHook>>;

Status run_before_step(const HookList& hooks, StepState& s);
Status run_after_step(const HookList& hooks, StepState& s);
Status run_end(const HookList& hooks, int64_t step);

}  // namespace dtrain
