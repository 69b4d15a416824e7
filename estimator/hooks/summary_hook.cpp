// Training summaries (estimator/hooks/summary_hook.hpp).
#include "estimator/hooks/summary_hook.hpp"

#include <string>
#include <utility>
#include <vector>

#include "estimator/model_outputs.hpp"
#include "strategies/replica_step.hpp"

namespace dtrain {

Status SummaryHook::after_step(StepState& s) {
  accumulate(sums_, s.out);
  if (!s.crossed(every_) && !s.last()) return Status::Ok();
  std::vector<std::pair<std::string, double>> scalars = output_scalars(program_, sums_);
  scalars.insert(scalars.begin() + 1, {"learning_rate", s.learning_rate});
  if (Status st = writer_.scalars(s.step, scalars); !st) return st;
  if (Status st = writer_.flush(); !st) return st;
  sums_ = StepOutput{};
  return Status::Ok();
}

}  // namespace dtrain
