// The run's TensorBoard summaries besides scalars (estimator/run_summaries.hpp).
#include "estimator/run_summaries.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <set>

namespace dtrain {
namespace {

double wall_time_now() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

// One example's pixels (`count` values from `v`) as 8-bit.
template <class T>
std::vector<uint8_t> to_pixels(const T* v, int64_t count) {
  std::vector<uint8_t> out(static_cast<size_t>(count));
  if constexpr (std::is_same_v<T, uint8_t>) {
    std::copy(v, v + count, out.begin());
  } else {
    const auto [lo_it, hi_it] = std::minmax_element(v, v + count);
    const double lo = *lo_it, hi = *hi_it;
    const bool unit = lo >= 0 && hi <= 1;
    for (int64_t i = 0; i < count; ++i) {
      const double x = unit ? v[i] * 255.0 : (hi > lo ? (v[i] - lo) * 255.0 / (hi - lo) : 0.0);
      out[static_cast<size_t>(i)] = static_cast<uint8_t>(std::clamp(x + 0.5, 0.0, 255.0));
    }
  }
  return out;
}

}  // namespace

std::vector<HParam> job_hparams(const JobSpec& job, const Program& program, int64_t global_batch) {
  int64_t parameters = 0;
  for (const VariableSpec& v : program.model->variables()) {
    if (!v.trainable) continue;
    int64_t n = 1;
    for (const int64_t d : v.shape) n *= d;
    parameters += n;
  }
  std::string losses;
  for (const ProgramOutput& o : program.outputs) {
    if (!losses.empty()) losses += ",";
    losses += o.loss->name();
  }
  const auto num = [](auto v) { return static_cast<double>(v); };
  return {
      {"optimizer.type", job.optimizer.type, "The optimizer (optimizer.type)."},
      {"optimizer.learning_rate", job.optimizer.learning_rate, "The initial learning rate (optimizer.learning_rate)."},
      {"optimizer.schedule.type", job.optimizer.schedule.type, "The learning rate schedule."},
      {"data.train.batch_size", num(global_batch), "The global batch of one update."},
      {"strategy.type", job.strategy.type, "The distribution strategy."},
      {"precision.compute", job.precision.compute, "The compute type of dense and conv2d layers."},
      {"run.max_steps", num(job.run.max_steps), "Steps to train."},
      {"run.seed", num(job.run.seed), "Seed of initializers, dropout and shuffling."},
      {"run.accumulation_steps", num(job.run.accumulation_steps), "Micro-batches per update."},
      {"model.layers", num(job.model.layers.size()), "Layers of the model."},
      {"model.parameters", num(parameters), "Trainable values of the model."},
      {"model.loss", losses, "The loss of each output."},
  };
}

std::vector<HParamMetric> job_metrics(const JobSpec& job, const Program& program) {
  std::vector<std::string> tags = {"loss"};
  tags.insert(tags.end(), program.metric_tags.begin(), program.metric_tags.end());
  std::vector<HParamMetric> out;
  for (const std::string& tag : tags) {
    out.push_back({"", tag, false, fmt::format("Training {} (model_dir, every run.save_summary_steps).", tag)});
  }
  if (job.data.eval) {
    for (const std::string& tag : tags) {
      out.push_back({"eval", tag, true, fmt::format("Evaluation {} (model_dir/eval).", tag)});
    }
  }
  return out;
}

std::string job_markdown(const std::string& resolved_yaml) {
  std::string yaml = resolved_yaml;
  if (!yaml.empty() && yaml.back() != '\n') yaml += '\n';
  return "```yaml\n" + yaml + "```\n";
}

std::vector<Image8> sample_images(const Batch& batch, int64_t n) {
  const Tensor& f = batch.features;
  if (f.empty() || n <= 0 || (f.dtype() != DType::f32 && f.dtype() != DType::u8)) return {};
  const int rank = f.rank();
  const int64_t channels = rank == 4 ? f.dim(3) : 1;
  if (!(rank == 3 || (rank == 4 && (channels == 1 || channels == 3 || channels == 4)))) return {};
  const Tensor host = f.to_host();
  const int64_t per_example = f.dim(1) * f.dim(2) * channels;
  std::vector<Image8> out;
  for (int64_t i = 0; i < std::min(n, f.dim(0)); ++i) {
    Image8 im;
    im.height = static_cast<int>(f.dim(1));
    im.width = static_cast<int>(f.dim(2));
    im.channels = static_cast<int>(channels);
    im.pixels = f.dtype() == DType::u8 ? to_pixels(host.host_data<uint8_t>() + i * per_example, per_example)
                                       : to_pixels(host.data() + i * per_example, per_example);
    out.push_back(std::move(im));
  }
  return out;
}

Status write_run_start(SummaryWriter& writer, int64_t step, const JobSpec& job, const std::vector<HParam>& hparams,
                       const std::vector<HParamMetric>& metrics) {
  if (Status s = writer.text("job", step, job_markdown(job.resolved_yaml)); !s) return s;
  const double now = wall_time_now();
  if (Status s = write_hparams_experiment(writer, step, hparams, metrics, now); !s) return s;
  std::error_code ec;
  const std::filesystem::path dir = std::filesystem::absolute(job.run.model_dir, ec);
  if (Status s = write_hparams_session_start(writer, step, hparams, ec ? job.run.model_dir : dir.string(), now); !s) {
    return s;
  }
  return writer.flush();
}

Status write_run_end(SummaryWriter& writer, int64_t step, const Status& result) {
  if (!result.ok() && result.error().kind == ErrorKind::kStopped) return Status::Ok();
  const SessionStatus status = result.ok() ? SessionStatus::kSuccess : SessionStatus::kFailure;
  if (Status s = write_hparams_session_end(writer, step, status, wall_time_now()); !s) return s;
  return writer.flush();
}

}  // namespace dtrain
