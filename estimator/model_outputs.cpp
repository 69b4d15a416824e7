// Labels per model output: the names the data gives them by, shape and value
// checks, and the per-output summary scalars.
#include "estimator/model_outputs.hpp"

#include <fmt/format.h>

#include "engine/losses/label_check.hpp"

namespace dtrain {

namespace {
// "job.yaml:14:5: model.outputs.box" or, for the shorthand, "<job>: model.loss".
std::string output_place(const ProgramOutput& o, const std::string& job_path) {
  if (o.name.empty()) return job_path + ": model.loss";
  return fmt::format("{}{}model.outputs.{}", o.where, o.where.empty() ? "" : ": ", o.name);
}
}  // namespace

void set_model_outputs(InputOptions& options, const Program& program) {
  options.output_names.clear();
  options.label_names.clear();
  if (program.outputs.size() < 2) return;
  for (const ProgramOutput& o : program.outputs) {
    options.output_names.push_back(o.name);
    options.label_names.push_back(o.labels);
  }
}

Status check_label_shapes(const Input& input, const Program& program, const std::string& job_path) {
  const std::vector<Shape> extra = input.extra_label_shapes();
  for (size_t j = 0; j < program.outputs.size(); ++j) {
    const ProgramOutput& o = program.outputs[j];
    const Shape labels = j == 0 ? input.label_shape() : extra.at(j - 1);
    if (Status s = o.loss->check_shapes(program.model->outputs()[j].shape, labels); !s) {
      const std::string from = o.name.empty() ? "" : fmt::format(" (labels \"{}\")", o.labels);
      return config_error(fmt::format("{}: {}{}", output_place(o, job_path), s.error().message, from));
    }
  }
  return Status::Ok();
}

Status check_batch_labels(const Batch& batch, const Program& program,
                          const std::function<std::string(size_t output, int64_t row)>& label_place) {
  for (size_t j = 0; j < program.outputs.size(); ++j) {
    const ProgramOutput& o = program.outputs[j];
    if (o.loss->name() != "sparse_softmax_cross_entropy") continue;
    const Tensor& labels = j == 0 ? batch.labels : batch.extra_labels.at(j - 1);
    std::function<std::string(int64_t)> place = nullptr;
    if (label_place) place = [&label_place, j](int64_t row) { return label_place(j, row); };
    if (Status s = check_labels(labels, program.model->outputs()[j].shape, place); !s) {
      if (o.name.empty()) return s;
      return data_error(fmt::format("output {} (labels \"{}\"): {}", o.name, o.labels, s.error().message));
    }
  }
  return Status::Ok();
}

std::vector<std::pair<std::string, double>> output_scalars(const Program& program, const StepOutput& sums) {
  std::vector<std::pair<std::string, double>> out;
  out.emplace_back("loss", sums.loss_sum / static_cast<double>(sums.examples));
  std::vector<double> state = sums.metric_state;
  state.resize(program.metric_state_size(), 0.0);
  for (size_t i = 0; i < program.metrics.size(); ++i) {
    out.emplace_back(program.metric_tags[i], program.metrics[i]->result(program.metric_state(state, i)));
  }
  return out;
}

}  // namespace dtrain
