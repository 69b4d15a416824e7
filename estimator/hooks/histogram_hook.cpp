// Weight and gradient histograms (estimator/hooks/histogram_hook.hpp).
#include "estimator/hooks/histogram_hook.hpp"

#include <fmt/format.h>

#include <set>
#include <string>

namespace dtrain {

namespace {

Status write_all(SummaryWriter& writer, int64_t step, const char* prefix,
                 const std::vector<std::pair<std::string, Tensor>>& tensors) {
  for (const auto& [name, t] : tensors) {
    const Tensor host = t.to_host();
    if (Status s = writer.histogram(fmt::format("{}/{}", prefix, name), step,
                                    std::span<const float>(host.data(), static_cast<size_t>(host.numel())));
        !s) {
      return s;
    }
  }
  return Status::Ok();
}

}  // namespace

Status HistogramHook::after_step(StepState& s) {
  if (!s.crossed(every_)) return Status::Ok();
  std::set<std::string> trainable;
  for (const VariableSpec& v : program_.model->variables()) {
    if (v.trainable) trainable.insert(v.name);
  }
  // logical_state() holds the optimizer slots too ("var/slot"): only the variables.
  std::vector<std::pair<std::string, Tensor>> weights;
  for (auto& [name, t] : strategy_.logical_state()) {
    if (trainable.count(name) != 0) weights.emplace_back(name, std::move(t));
  }
  if (Status st = write_all(writer_, s.step, "weights", weights); !st) return st;
  const std::vector<std::pair<std::string, Tensor>> grads = strategy_.applied_gradients();
  if (grads.empty() && !said_no_gradients_) {
    said_no_gradients_ = true;
    log_.info(fmt::format("run.histogram_steps: strategy {} does not hold the applied gradients on the chief "
                          "(the ps tasks apply them): weight histograms only",
                          strategy_.name()));
  }
  if (Status st = write_all(writer_, s.step, "gradients", grads); !st) return st;
  return writer_.flush();
}

}  // namespace dtrain
