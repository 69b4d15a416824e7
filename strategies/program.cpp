// Builds the model, loss, metrics and optimizer of a job.
#include "strategies/program.hpp"

#include <cassert>

#include <fmt/format.h>

namespace dtrain {

Result<Program> make_program(const JobSpec& job) {
  Program p;
  auto model = Model::build(job.model);
  if (!model) return model.error();
  p.model = std::move(*model);
  auto loss = make_loss(job.model.loss);
  if (!loss) return config_error(fmt::format("{}: model.loss: {}", job.source_path, loss.error().message));
  p.loss = std::move(*loss);
  p.metric_offsets.push_back(0);
  for (const std::string& name : job.model.metrics) {
    auto m = make_metric(name, job.model.loss);
    if (!m) return config_error(fmt::format("{}: model.metrics: {}", job.source_path, m.error().message));
    p.metric_offsets.push_back(p.metric_offsets.back() + (*m)->state_size(p.model->output_shape()));
    p.metrics.push_back(std::move(*m));
  }
  p.optimizer_spec = job.optimizer;
  auto opt = make_optimizer(job.optimizer);
  if (!opt) return config_error(fmt::format("{}: optimizer: {}", job.source_path, opt.error().message));
  p.optimizer = std::move(*opt);
  p.seed = job.run.seed;
  p.loss_sum = job.strategy.loss_reduction == "sum";
  p.accumulation_steps = job.run.accumulation_steps;
  p.compute = parse_dtype(job.precision.compute).value_or(DType::f32);  // the schema allows only the three names
  p.loss_scale = LossScale(p.compute == DType::f16);
  return p;
}

ops::Context Program::context_on(const std::string& device) const {
  auto d = parse_device(device);
  assert(d && "make_strategy checks device names");
  return {d ? *d : kHost, compute};
}

}  // namespace dtrain
