// run.profile's window (estimator/profile_report.hpp): opens the profiler
// for the steps of the window, gives it to the input, spans each step from
// asking for its batch to the end of its hooks, and writes the trace and
// prints the phase table when the window ends or training does. Last in the
// hook list, so that its span holds the other hooks.
#pragma once

#include <optional>

#include "datasets/pipeline.hpp"
#include "estimator/hooks/training_hook.hpp"
#include "estimator/logger.hpp"
#include "estimator/profile_report.hpp"

namespace dtrain {

class ProfileHook : public TrainingHook {
 public:
  // `window` and `input` outlive the hook.
  ProfileHook(ProfileWindow& window, Input& input, Logger& log) : window_(window), input_(input), log_(log) {}
  Status before_step(StepState& s) override;
  Status after_step(StepState& s) override;
  Status end(int64_t step) override;

 private:
  Status close(int64_t next_step);
  ProfileWindow& window_;
  Input& input_;
  Logger& log_;
  std::optional<ProfileScope> step_;
};

}  // namespace dtrain
