// The NaN guard (estimator/hooks/nan_guard_hook.hpp).
#include "estimator/hooks/nan_guard_hook.hpp"

#include <fmt/format.h>

#include <cmath>

namespace dtrain {

Status NanGuardHook::after_step(StepState& s) {
  if (std::isfinite(s.loss)) return Status::Ok();
  log_.end_progress();
  return runtime_error(fmt::format(
      "loss is {} at step {}; stopping. {} (nothing later was saved); lower the learning rate or set "
      "optimizer.clip_by_global_norm",
      std::isnan(s.loss) ? "NaN" : "Inf", s.step_before + 1,
      last_checkpoint_.empty() ? "No checkpoint was written" : "The last good checkpoint is " + last_checkpoint_));
}

}  // namespace dtrain
