// run.accumulation_steps and run.micro_batch_rows: checked against the
// training batch and described at start-up (the micro-batches themselves are
// strategies/replica_step.cpp's).
#include "estimator/accumulation.hpp"

#include <fmt/format.h>

#include <string>

#include "engine/layers/batch_norm.hpp"

namespace dtrain {

namespace {

// A kConfig error when the model has a synchronised batch_norm, which micro-
// batches cannot take: `setting` names what splits the shard ("run.
// accumulation_steps 2"), `remedy` how to leave it out.
Status refuse_sync_batch_norm(const JobSpec& job, const std::string& setting, const std::string& remedy) {
  for (const LayerSpec& layer : job.model.layers) {
    if (!is_synchronised_batch_norm(layer)) continue;
    return config_error(fmt::format(
        "{}: batch_norm sync: true cannot be combined with {} (its statistics would be summed over the replicas "
        "once per micro-batch); use sync: false or {}",
        layer.where.empty() ? job.source_path : layer.where, setting, remedy));
  }
  return Status::Ok();
}

bool has_batch_norm(const JobSpec& job) {
  for (const LayerSpec& layer : job.model.layers) {
    if (layer.type == "batch_norm") return true;
  }
  return false;
}

bool power_of_two(int64_t n) { return n > 0 && (n & (n - 1)) == 0; }

Status check_micro_batch_rows(const JobSpec& job, int64_t rows) {
  if (job.run.accumulation_steps > 1) {
    return config_error(fmt::format(
        "{}: run.micro_batch_rows {} and run.accumulation_steps {} both split each replica's shard into "
        "micro-batches; set one of them (micro_batch_rows also fixes the order in which every strategy adds "
        "the gradients)",
        job.source_path, rows, job.run.accumulation_steps));
  }
  return refuse_sync_batch_norm(job, fmt::format("run.micro_batch_rows {}", rows), "leave micro_batch_rows unset");
}

std::vector<std::string> describe_micro_batch_rows(const JobSpec& job, const BatchPlan& plan) {
  const int64_t rows = *job.run.micro_batch_rows;
  const int64_t batch = plan.per_process, shard = plan.per_replica();
  const int replicas = plan.replicas, workers = plan.workers;
  const int64_t blocks = (shard + rows - 1) / rows;
  std::vector<std::string> out;
  out.push_back(fmt::format(
      "micro-batches: each replica's shard of {} rows runs as {} micro-batch(es) of {} rows (run.micro_batch_rows); "
      "their gradients, then the replicas'{}, are added in one fixed pairwise order that every strategy shares",
      shard, blocks, rows, workers > 1 ? " and the workers' sums (an ordered all-reduce)" : " sums"));
  // One_device's grouping needs whole micro-batches, a power of two of them
  // per replica and, across workers, per worker (strategies/tree_sum.hpp).
  const bool whole = plan.extra() == 0 && shard % rows == 0;
  if (!whole || !power_of_two(blocks)) {
    out.push_back(fmt::format(
        "note: a shard of {} rows is not a power-of-two number of whole micro-batches of {} rows, so the sums are "
        "grouped differently than one_device's on the whole global batch (deterministic, not the same bits); "
        "1, 2, 4, 8, ... micro-batches per shard give one_device's bits",
        shard, rows));
  } else if (workers > 1 && !power_of_two(blocks * replicas)) {
    out.push_back(fmt::format(
        "note: this worker's {} rows are {} micro-batches of {} rows, not a power of two, so the workers' sums are "
        "grouped differently than one_device's on the whole global batch (deterministic, not the same bits)",
        batch, blocks * replicas, rows));
  }
  if (has_batch_norm(job)) {
    out.push_back(fmt::format("note: batch_norm computes its statistics per micro-batch of {} rows, not over "
                              "the {} rows of an update",
                              rows, batch));
  }
  return out;
}

}  // namespace

Status check_accumulation(const JobSpec& job, const BatchPlan& plan) {
  const int64_t batch = plan.per_process;
  const int replicas = plan.replicas;
  if (job.run.micro_batch_rows) return check_micro_batch_rows(job, *job.run.micro_batch_rows);
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
  return refuse_sync_batch_norm(job, fmt::format("run.accumulation_steps {}", k), "accumulation_steps: 1");
}

std::vector<std::string> describe_accumulation(const JobSpec& job, const BatchPlan& plan) {
  if (job.run.micro_batch_rows) return describe_micro_batch_rows(job, plan);
  const int64_t batch = plan.per_process;
  const int replicas = plan.replicas;
  const int64_t k = job.run.accumulation_steps;
  if (k <= 1) return {};
  std::vector<std::string> out;
  const int64_t micro = batch / (k * replicas);
  out.push_back(fmt::format(
      "gradient accumulation: each update of {} rows runs as {} micro-batches of {} rows on each of {} replica(s); "
      "their gradients are summed into one optimizer update (equal to one step on the {} rows); steps count updates",
      batch, k, micro, replicas, batch));
  if (has_batch_norm(job)) {
    out.push_back(fmt::format("note: batch_norm computes its statistics per micro-batch of {} rows, not over "
                              "the {} rows of an update, so training differs from one step on the whole batch "
                              "(as in every framework)",
                              micro, batch));
  }
  return out;
}

}  // namespace dtrain
