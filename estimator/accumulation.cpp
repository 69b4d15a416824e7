// run.accumulation_steps: checked against the training batch and described at
// start-up (the accumulation itself is strategies/replica_step.cpp's).
#include "estimator/accumulation.hpp"

#include <fmt/format.h>

namespace dtrain {

Status check_accumulation(const JobSpec& job, int64_t batch, int replicas) {
  const int64_t k = job.run.accumulation_steps;
  if (k <= 1) return Status::Ok();
  const DataSourceSpec& d = *job.data.train;
  const std::string where = d.where.empty() ? job.source_path : d.where;
  if (batch % (k * replicas) != 0) {
    // batch_size_per_replica only has to be a multiple of k.
    const bool per_replica = d.batch_size_per_replica.has_value();
    const int64_t given = per_replica ? *d.batch_size_per_replica : batch;
    const int64_t unit = per_replica ? k : k * replicas;
    const int64_t below = given / unit * unit, above = below + unit;
    return config_error(fmt::format(
        "{}: data.train.{}: {} rows per update do not split into run.accumulation_steps {} micro-batches on each of "
        "{} replica(s) (the batch must be divisible by {} x {} = {}); try {}{}",
        where, per_replica ? "batch_size_per_replica" : "batch_size", batch, k, replicas, k, replicas, k * replicas,
        below > 0 ? fmt::format("{} or ", below) : "", above));
  }
  for (const LayerSpec& layer : job.model.layers) {
    if (layer.type == "batch_norm" && layer.sync) {
      return config_error(fmt::format(
          "{}: batch_norm sync: true cannot be combined with run.accumulation_steps {} (its statistics would "
          "be summed over the replicas once per micro-batch); use sync: false or accumulation_steps: 1",
          layer.where.empty() ? job.source_path : layer.where, k));
    }
  }
  return Status::Ok();
}

std::vector<std::string> describe_accumulation(const JobSpec& job, int64_t batch, int replicas) {
  const int64_t k = job.run.accumulation_steps;
  if (k <= 1) return {};
  std::vector<std::string> out;
  const int64_t micro = batch / (k * replicas);
  out.push_back(fmt::format(
      "gradient accumulation: each update of {} rows runs as {} micro-batches of {} rows on each of {} replica(s); "
      "their gradients are summed into one optimizer update (equal to one step on the {} rows); steps count updates",
      batch, k, micro, replicas, batch));
  for (const LayerSpec& layer : job.model.layers) {
    if (layer.type == "batch_norm") {
      out.push_back(fmt::format("note: batch_norm computes its statistics per micro-batch of {} rows, not over "
                                "the {} rows of an update, so training differs from one step on the whole batch "
                                "(as in every framework)",
                                micro, batch));
      break;
    }
  }
  return out;
}

}  // namespace dtrain
