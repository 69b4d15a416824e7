// Replica threads, shards, and the evaluation/prediction shared by towers
// and mirrored.
#include "strategies/replicated.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "strategies/all_reduce.hpp"
#include "strategies/cluster_runtime.hpp"
#include "strategies/replica_step.hpp"

namespace dtrain {

ReplicatedStrategy::ReplicatedStrategy(Program& program, std::vector<Device> devices)
    : program_(program), devices_(std::move(devices)), pool_(static_cast<int>(devices_.size())) {
  for (const Device& d : devices_) replicas_.push_back(program_.model->make_replica_state(program_.context_on(d)));
  // replicate_model_fn's rule: the shared copy sits on the one device, or on
  // the host when there are several that do not share memory.
  variable_ctx_ = replicas_[0].ctx;
  for (const ReplicaState& rs : replicas_) {
    if (!rs.ctx.device.same_memory(variable_ctx_.device)) variable_ctx_.device = kHost;
  }
  for (ReplicaState& rs : replicas_) replica_ptrs_.push_back(&rs);
  sum_statistics_over(nullptr, nullptr);
}

void ReplicatedStrategy::sum_statistics_over(std::unique_ptr<GlooComm> comm, ClusterRuntime* cluster) {
  stats_comm_ = std::move(comm);
  ReplicaGroupSum::AcrossWorkers across;
  if (stats_comm_) {
    across = [this, cluster](std::vector<double>& values) {
      if (Status s = stats_comm_->all_reduce_sum(values.data(), values.size()); !s && cluster != nullptr) {
        cluster->fail_after_comm_error(s.error());
      }
    };
  }
  group_sum_ = std::make_unique<ReplicaGroupSum>(num_replicas(), std::move(across));
  for (size_t r = 0; r < replicas_.size(); ++r) replicas_[r].cross_replica = group_sum_->replica(static_cast<int>(r));
}

std::vector<StepOutput> ReplicatedStrategy::on_shards(int64_t rows,
                                                      const std::function<StepOutput(int, int64_t, int64_t)>& fn) {
  const auto shards = split_batch(rows, num_replicas());
  std::vector<bool> participating;
  for (const auto& [begin, end] : shards) participating.push_back(end > begin);
  group_sum_->begin_step(participating);
  std::vector<StepOutput> outs(shards.size());
  pool_.run([&](int r) {
    // The first name wins: with one replica this is the caller's (main) thread.
    if (program_.profiler) program_.profiler->name_thread(fmt::format("replica {}", r));
    const auto [begin, end] = shards[static_cast<size_t>(r)];
    outs[static_cast<size_t>(r)] = fn(r, begin, end);
  }, [this] { abandon_step(); });
  return outs;
}

void ReplicatedStrategy::abandon_step() { group_sum_->abandon(); }

StepOutput ReplicatedStrategy::sum_outputs(const std::vector<StepOutput>& outs) {
  StepOutput total;
  for (const StepOutput& o : outs) accumulate(total, o);
  return total;
}

void ReplicatedStrategy::share_one_copy(std::vector<Tensor>& values) {
  const auto& vars = program_.model->variables();
  for (size_t r = 0; r < replicas_.size(); ++r) {
    const Device& d = replicas_[r].ctx.device;
    for (size_t i = 0; i < vars.size(); ++i) {
      const bool view = values[i].device().same_memory(d) && (vars[i].trainable || r == 0);
      replicas_[r].values[i] = view ? values[i] : copy_on(values[i], d);
    }
  }
}

void ReplicatedStrategy::refresh_private_copies(const std::vector<Tensor>& values) {
  for (ReplicaState& rs : replicas_) {
    for (size_t i = 0; i < values.size(); ++i) {
      if (!rs.values[i].shares_storage(values[i])) rs.values[i].copy_from(values[i]);
    }
  }
}

std::span<Tensor> ReplicatedStrategy::reduce_to_variables(const std::vector<size_t>& trainable) {
  sum_into_first(replica_ptrs_, trainable);
  std::vector<Tensor>& summed = replicas_[0].grads;
  if (summed.empty() || variable_ctx_.device.same_memory(replicas_[0].ctx.device)) return summed;
  if (variable_grads_.size() != summed.size()) variable_grads_.resize(summed.size());
  for (size_t i : trainable) {
    if (variable_grads_[i].empty()) variable_grads_[i] = Tensor::empty(summed[i].shape(), DType::f32, variable_ctx_.device);
    variable_grads_[i].copy_from(summed[i]);
  }
  return variable_grads_;
}

StepOutput ReplicatedStrategy::eval_step(const Batch& batch) {
  return sum_outputs(on_shards(batch.size(), [&](int r, int64_t begin, int64_t end) {
    return run_replica(program_, replicas_[static_cast<size_t>(r)], batch, begin, end, 0, false, 1.0f);
  }));
}

std::vector<Tensor> ReplicatedStrategy::predict_outputs(const Batch& batch) {
  std::vector<Tensor> out;
  for (const ModelOutput& o : program_.model->outputs()) {
    Shape shape = {batch.size()};
    shape.insert(shape.end(), o.shape.begin(), o.shape.end());
    out.emplace_back(shape);
  }
  on_shards(batch.size(), [&](int r, int64_t begin, int64_t end) {
    if (end > begin) {
      const std::vector<Tensor> p = predict_replica(program_, replicas_[static_cast<size_t>(r)], batch, begin, end);
      for (size_t j = 0; j < out.size(); ++j) out[j].rows(begin, end).copy_from(p[j]);
    }
    return StepOutput{};
  });
  return out;
}

}  // namespace dtrain
