// Stops training with an error at the first step whose loss is NaN or Inf,
// naming the last good checkpoint (nothing of that step is saved).
#pragma once

#include <string>

#include "estimator/hooks/training_hook.hpp"
#include "estimator/logger.hpp"

namespace dtrain {

class NanGuardHook : public TrainingHook {
 public:
  // `last_checkpoint`: the Estimator's latest saved checkpoint ("" = none), read at the failure.
  NanGuardHook(Logger& log, const std::string& last_checkpoint) : log_(log), last_checkpoint_(last_checkpoint) {}
  Status after_step(StepState& s) override;

 private:
  Logger& log_;
  const std::string& last_checkpoint_;
};

}  // namespace dtrain
