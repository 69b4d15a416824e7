// Stop signals and the evaluator's early stop (estimator/hooks/stop_signal_hook.hpp).
#include "estimator/hooks/stop_signal_hook.hpp"

#include <csignal>
#include <optional>

#include "engine/stop_signals.hpp"

namespace dtrain {

Status StopSignalHook::after_step(StepState& s) {
  const int local_sig = received_stop_signal();
  bool local_early = false;  // the chief saw the evaluator's early-stopping decision
  if (early_stop_source_ != nullptr && seconds_since(last_poll_) >= 0.5) {
    last_poll_ = std::chrono::steady_clock::now();
    if (auto d = early_stop_source_->get("train/early_stop", std::chrono::milliseconds(1))) {
      local_early = true;
      s.early_stop_reason = *d;
    }
  }
  // Agreeing with the other workers is a phase of its own ("sync").
  std::optional<ProfileScope> sync;
  if (multi_worker_) sync.emplace(s.profiler, "sync", "stop signal");
  if (any_worker(local_sig != 0 || local_early)) {
    s.early_stop = any_worker(local_early);
    const bool any_sig = any_worker(local_sig != 0);
    // A task whose own signal arrived during the agreement reports it as its
    // own (Slurm signals a step's tasks one after another).
    const int own = local_sig ? local_sig : received_stop_signal();
    if (any_sig) s.stop_signal = own ? own : -1;
  }
  sync.reset();
  if (s.stop_signal != 0) {
    // Every task stops at this step: agree whether any was sent SIGUSR1.
    stopped_by_requeue_signal_ = any_worker(received_stop_signal() == SIGUSR1);
  }
  return Status::Ok();
}

}  // namespace dtrain
