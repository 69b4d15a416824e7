// Summaries of a training run's start (estimator/hooks/start_summary_hook.hpp).
#include "estimator/hooks/start_summary_hook.hpp"

#include <fmt/format.h>

namespace dtrain {

Status StartSummaryHook::before_step(StepState& s) {
  if (started_) return Status::Ok();
  started_ = true;
  return write_run_start(writer_, s.step_before, job_, hparams_, metrics_);
}

Status StartSummaryHook::after_step(StepState& s) {
  if (images_written_ || s.batch == nullptr) return Status::Ok();
  images_written_ = true;
  const std::vector<Image8> images = sample_images(*s.batch, job_.run.summary_images);
  for (size_t i = 0; i < images.size(); ++i) {
    auto png = encode_png(images[i]);
    if (!png) return png.error();
    if (Status st = writer_.image(fmt::format("input/image/{}", i), s.step_before, images[i].height, images[i].width,
                                  images[i].channels, *png);
        !st) {
      return st;
    }
  }
  return images.empty() ? Status::Ok() : writer_.flush();
}

}  // namespace dtrain
