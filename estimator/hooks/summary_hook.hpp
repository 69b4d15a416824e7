// The chief's training summaries: every run.save_summary_steps steps (and
// at the last) the model outputs' scalars over the steps since the last
// write (loss, metrics) and the learning rate, then a flush.
#pragma once

#include <cstdint>

#include "engine/io/summary_writer.hpp"
#include "estimator/hooks/training_hook.hpp"
#include "strategies/program.hpp"

namespace dtrain {

class SummaryHook : public TrainingHook {
 public:
  // `every` > 0; `writer` and `program` outlive the hook.
  SummaryHook(SummaryWriter& writer, const Program& program, int64_t every)
      : writer_(writer), program_(program), every_(every) {}
  const char* phase() const override { return "summaries"; }
  Status after_step(StepState& s) override;

 private:
  SummaryWriter& writer_;
  const Program& program_;
  int64_t every_;
  StepOutput sums_;  // since the last write
};

}  // namespace dtrain
