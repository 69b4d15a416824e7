// Builds the model, loss, metrics and optimizer of a job.
#include "strategies/program.hpp"

#include <fmt/format.h>

namespace dtrain {

std::vector<std::pair<std::string, Tensor>> trainable_on_host(const Program& program,
                                                              std::span<const Tensor> per_variable) {
  const auto& vars = program.model->variables();
  std::vector<std::pair<std::string, Tensor>> out;
  for (size_t i = 0; i < vars.size() && i < per_variable.size(); ++i) {
    if (vars[i].trainable && !per_variable[i].empty()) out.emplace_back(vars[i].name, per_variable[i].to_host());
  }
  return out;
}

Result<Program> make_program(const JobSpec& job) {
  Program p;
  auto model = Model::build(job.model);
  if (!model) return model.error();
  p.model = std::move(*model);
  p.metric_offsets.push_back(0);
  auto add_metric = [&p](std::unique_ptr<Metric> m, std::string tag, const Shape& shape) {
    p.metric_offsets.push_back(p.metric_offsets.back() + m->state_size(shape));
    p.metrics.push_back(std::move(m));
    p.metric_tags.push_back(std::move(tag));
  };
  if (job.model.outputs.empty()) {
    auto loss = make_loss(job.model.loss);
    if (!loss) return config_error(fmt::format("{}: model.loss: {}", job.source_path, loss.error().message));
    p.outputs.push_back({"", std::move(*loss), 1.0f, "", "", 0, job.model.metrics.size()});
    auto cw = make_class_weights(job.model.class_weight, *parse_loss_kind(job.model.loss), p.model->output_shape(),
                                 fmt::format("{}: model.class_weight", job.model.class_weight.where));
    if (!cw) return cw.error();
    p.outputs.back().class_weights = std::move(*cw);
    for (const std::string& name : job.model.metrics) {
      auto m = make_metric(name, job.model.loss);
      if (!m) return config_error(fmt::format("{}: model.metrics: {}", job.source_path, m.error().message));
      std::string tag = (*m)->name();  // the tag a one-output job always had
      add_metric(std::move(*m), std::move(tag), p.model->output_shape());
    }
  }
  for (size_t j = 0; j < job.model.outputs.size(); ++j) {
    const ModelOutputSpec& o = job.model.outputs[j];
    const std::string at = fmt::format("{}: model.outputs.{}", o.where, o.name);
    auto loss = make_loss(o.loss);
    if (!loss) return config_error(fmt::format("{}.loss: {}", at, loss.error().message));
    const Shape& shape = p.model->outputs()[j].shape;
    p.outputs.push_back({o.name, std::move(*loss), static_cast<float>(o.weight), o.labels, o.where, p.metrics.size(),
                         o.metrics.size() + 1});
    auto cw = make_class_weights(o.class_weight, *parse_loss_kind(o.loss), shape,
                                 fmt::format("{}: model.outputs.{}.class_weight", o.class_weight.where, o.name));
    if (!cw) return cw.error();
    p.outputs.back().class_weights = std::move(*cw);
    auto mean = make_metric("mean_loss", o.loss);
    if (!mean) return config_error(fmt::format("{}: {}", at, mean.error().message));
    add_metric(std::move(*mean), "loss/" + o.name, shape);
    for (const std::string& name : o.metrics) {
      auto m = make_metric(name, o.loss);
      if (!m) return config_error(fmt::format("{}.metrics: {}", at, m.error().message));
      add_metric(std::move(*m), o.name + "_" + name, shape);
    }
  }
  p.optimizer_spec = job.optimizer;
  auto opt = make_optimizer(job.optimizer);
  if (!opt) return config_error(fmt::format("{}: optimizer: {}", job.source_path, opt.error().message));
  p.optimizer = std::move(*opt);
  p.seed = job.run.seed;
  p.loss_sum = job.strategy.loss_reduction == "sum";
  p.accumulation_steps = job.run.accumulation_steps;
  p.micro_batch_rows = job.run.micro_batch_rows.value_or(0);
  p.compute = parse_dtype(job.precision.compute).value_or(DType::f32);  // the schema allows only the three names
  p.loss_scale = LossScale(p.compute == DType::f16);
  p.tf32 = job.precision.matmul == "tf32";
  p.deterministic = job.run.deterministic;
  return p;
}

ops::Context Program::context_on(const Device& device) const { return {device, compute, tf32, deterministic}; }

}  // namespace dtrain
