// The chief's summaries of a training run's start: before its first step
// the resolved job as text and the HParams tab's experiment and session
// start; after it, run.summary_images sample images of the step's batch.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/base/job_spec.hpp"
#include "engine/io/summary_writer.hpp"
#include "estimator/hooks/training_hook.hpp"
#include "estimator/run_summaries.hpp"

namespace dtrain {

class StartSummaryHook : public TrainingHook {
 public:
  // `writer` and `job` outlive the hook.
  StartSummaryHook(SummaryWriter& writer, const JobSpec& job, std::vector<HParam> hparams,
                   std::vector<HParamMetric> metrics)
      : writer_(writer), job_(job), hparams_(std::move(hparams)), metrics_(std::move(metrics)) {}
  const char* phase() const override { return "summaries"; }
  Status before_step(StepState& s) override;
  Status after_step(StepState& s) override;

 private:
  SummaryWriter& writer_;
  const JobSpec& job_;
  std::vector<HParam> hparams_;
  std::vector<HParamMetric> metrics_;
  bool started_ = false, images_written_ = false;
};

}  // namespace dtrain
