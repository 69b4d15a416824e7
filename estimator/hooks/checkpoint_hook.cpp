// Checkpoints, evaluation and export during training (estimator/hooks/checkpoint_hook.hpp).
#include "estimator/hooks/checkpoint_hook.hpp"

namespace dtrain {

Status CheckpointHook::after_step(StepState& s) {
  bool save_now = s.ends() || (run_.save_checkpoints_steps && s.crossed(*run_.save_checkpoints_steps));
  if (run_.save_checkpoints_secs) save_now = save_now || seconds_since(last_save_) >= *run_.save_checkpoints_secs;
  if (!save_now) return Status::Ok();
  {
    const ProfileScope checkpoint(s.profiler, "checkpoint");
    if (Status st = actions_.save(); !st) return st;
  }
  saved_step_ = s.step;
  last_save_ = Clock::now();
  const bool throttle_ok = !last_eval_ || seconds_since(*last_eval_) >= eval_.throttle_secs;
  const bool delay_ok = seconds_since(start_) >= eval_.start_delay_secs;
  if (!can_eval_ || s.stop_signal != 0 || !(s.last() || (throttle_ok && delay_ok))) return Status::Ok();
  const ProfileScope eval(s.profiler, "eval");
  auto r = actions_.evaluate();
  if (!r) return r.error();
  last_eval_ = Clock::now();
  if (early_ != nullptr && early_->add(r->global_step, actions_.early_metric(*r))) {
    if (Status st = actions_.record_early_stop(*early_); !st) return st;
    s.early_stop = true;
    s.early_stop_reason = early_->reason();
  }
  return actions_.export_after(&*r, s.last() || s.early_stop);
}

Status CheckpointHook::end(int64_t step) {
  if (saved_step_ != step && step > 0) {
    if (Status st = actions_.save(); !st) return st;
    if (can_eval_) {
      auto r = actions_.evaluate();
      if (!r) return r.error();
      if (Status st = actions_.export_after(&*r, true); !st) return st;
    }
  }
  // every: final, or any export when the final step was not evaluated (--no-eval, a cluster).
  if (step > 0 && export_final_) return actions_.export_after(nullptr, true);
  return Status::Ok();
}

}  // namespace dtrain
