// What the chief writes to TensorBoard about a run besides its scalars: the
// resolved job as text, its hyperparameters and metrics for the HParams tab,
// sample input images, and the session's end (run.save_summary_steps,
// run.histogram_steps and run.summary_images in the job schema).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "datasets/dataset.hpp"
#include "engine/base/job_spec.hpp"
#include "engine/base/status.hpp"
#include "engine/io/hparams_summary.hpp"
#include "engine/io/png_write.hpp"
#include "engine/io/summary_writer.hpp"
#include "strategies/program.hpp"

namespace dtrain {

// The job's hyperparameters as the HParams tab shows them, named by their
// job paths, the same names for every job so that runs compare:
// optimizer.type, optimizer.learning_rate, optimizer.schedule.type,
// data.train.batch_size (`global_batch`: the batch of one update),
// strategy.type, precision.compute, run.max_steps, run.seed,
// run.accumulation_steps, model.layers (the count), model.parameters (the
// trainable values) and model.loss (the outputs' losses, comma-separated).
std::vector<HParam> job_hparams(const JobSpec& job, const Program& program, int64_t global_batch);

// The scalars the HParams tab lists per session: loss and every metric tag
// of the training summaries (group "", model_dir) and, when the job has
// data.eval, of the evaluations (group "eval", model_dir/eval).
std::vector<HParamMetric> job_metrics(const JobSpec& job, const Program& program);

// The resolved job as Markdown: a fenced YAML block.
std::string job_markdown(const std::string& resolved_yaml);

// Up to `n` of the batch's first examples as 8-bit images when its features
// are images: (B, H, W, C) with C 1, 3 or 4, or (B, H, W); none otherwise.
// Float values all within [0, 1] are multiplied by 255, others stretched from
// the image's minimum to its maximum (a constant image is black).
std::vector<Image8> sample_images(const Batch& batch, int64_t n);

// The start of a training run at `step`: the job text, the hparams
// experiment and session start, then nothing else (images come with the first batch).
Status write_run_start(SummaryWriter& writer, int64_t step, const JobSpec& job, const std::vector<HParam>& hparams,
                       const std::vector<HParamMetric>& metrics);
// The end of a training run with `result`: a session end of status success
// or failure; nothing for a stop (kStopped), which a resume continues.
Status write_run_end(SummaryWriter& writer, int64_t step, const Status& result);

}  // namespace dtrain
