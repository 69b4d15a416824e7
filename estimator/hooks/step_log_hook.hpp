// Every run.log_step_count_steps steps (and at the last): the progress line
// (mean loss, steps/s, examples/s, input wait) and, on the chief, the
// throughput scalars of TensorBoard (and the cross-worker all-reduce time).
#pragma once

#include <chrono>
#include <cstdint>

#include "engine/io/summary_writer.hpp"
#include "estimator/hooks/training_hook.hpp"
#include "estimator/logger.hpp"

namespace dtrain {

class StepLogHook : public TrainingHook {
 public:
  // `every` > 0. `writer`: null on a task that writes no summaries.
  // `multi_worker`: the all-reduce scalars are written too.
  StepLogHook(Logger& log, SummaryWriter* writer, int64_t every, bool multi_worker)
      : log_(log), writer_(writer), every_(every), multi_worker_(multi_worker) {}
  const char* phase() const override { return "summaries"; }
  Status after_step(StepState& s) override;

 private:
  using Clock = std::chrono::steady_clock;
  Logger& log_;
  SummaryWriter* writer_;
  int64_t every_;
  bool multi_worker_;
  // The window since the last line.
  Clock::time_point start_ = Clock::now();
  int64_t steps_ = 0, examples_ = 0;
  double loss_ = 0, input_wait_ = 0, comm_ = 0, exposed_ = 0;
};

}  // namespace dtrain
