// run.histogram_steps: every N steps the chief writes a histogram of each
// trainable variable (weights/<var>) and of the gradient applied to it
// (gradients/<var>), then flushes.
#pragma once

#include <cstdint>

#include "engine/io/summary_writer.hpp"
#include "estimator/hooks/training_hook.hpp"
#include "estimator/logger.hpp"
#include "strategies/program.hpp"
#include "strategies/strategy.hpp"

namespace dtrain {

class HistogramHook : public TrainingHook {
 public:
  // `every` > 0; the references outlive the hook.
  HistogramHook(SummaryWriter& writer, Strategy& strategy, const Program& program, int64_t every, Logger& log)
      : writer_(writer), strategy_(strategy), program_(program), every_(every), log_(log) {}
  const char* phase() const override { return "summaries"; }
  Status after_step(StepState& s) override;

 private:
  SummaryWriter& writer_;
  Strategy& strategy_;
  const Program& program_;
  int64_t every_;
  Logger& log_;
  bool said_no_gradients_ = false;
};

}  // namespace dtrain
