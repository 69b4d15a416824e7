// After each step: has training been asked to stop? A stop signal to any task
// (SIGINT, SIGTERM, SIGUSR1: engine/stop_signals.hpp) or, in a cluster, the
// evaluator's early-stopping decision stops every task after the same step;
// the tasks agree on it through the strategy. Sets StepState::stop_signal and
// early_stop for the checkpoint hook and the loop.
#pragma once

#include <chrono>
#include <string>

#include "estimator/hooks/training_hook.hpp"
#include "strategies/coordination.hpp"
#include "strategies/strategy.hpp"

namespace dtrain {

class StopSignalHook : public TrainingHook {
 public:
  // `early_stop_source`: the chief's coordination client when the cluster has
  // an evaluator that decides early stops (the key train/early_stop, looked
  // for at most twice a second); null otherwise. `stopped_by_requeue_signal`:
  // set when training stops because some task received SIGUSR1.
  StopSignalHook(Strategy& strategy, bool multi_worker, CoordinationClient* early_stop_source,
                 bool& stopped_by_requeue_signal)
      : strategy_(strategy),
        multi_worker_(multi_worker),
        early_stop_source_(early_stop_source),
        stopped_by_requeue_signal_(stopped_by_requeue_signal) {}
  Status after_step(StepState& s) override;

 private:
  // True on every worker when true on any (one worker: `flag`).
  bool any_worker(bool flag) { return multi_worker_ ? strategy_.any_worker(flag) : flag; }
  Strategy& strategy_;
  bool multi_worker_;
  CoordinationClient* early_stop_source_;
  bool& stopped_by_requeue_signal_;
  std::chrono::steady_clock::time_point last_poll_ = std::chrono::steady_clock::now();
};

}  // namespace dtrain
