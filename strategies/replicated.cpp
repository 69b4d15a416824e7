// Replica threads, shards, and the evaluation/prediction shared by towers
// and mirrored.
#include "strategies/replicated.hpp"

#include <algorithm>

#include "strategies/replica_step.hpp"

namespace dtrain {

ReplicatedStrategy::ReplicatedStrategy(Program& program, std::vector<std::string> devices)
    : program_(program), devices_(std::move(devices)), pool_(static_cast<int>(devices_.size())) {
  for (size_t r = 0; r < devices_.size(); ++r) replicas_.push_back(program_.model->make_replica_state());
  for (ReplicaState& rs : replicas_) replica_ptrs_.push_back(&rs);
}

std::vector<StepOutput> ReplicatedStrategy::on_shards(int64_t rows,
                                                      const std::function<StepOutput(int, int64_t, int64_t)>& fn) {
  const auto shards = split_batch(rows, num_replicas());
  std::vector<StepOutput> outs(shards.size());
  pool_.run([&](int r) {
    const auto [begin, end] = shards[static_cast<size_t>(r)];
    outs[static_cast<size_t>(r)] = fn(r, begin, end);
  });
  return outs;
}

StepOutput ReplicatedStrategy::sum_outputs(const std::vector<StepOutput>& outs) {
  StepOutput total;
  for (const StepOutput& o : outs) accumulate(total, o);
  return total;
}

void ReplicatedStrategy::share_one_copy(std::vector<Tensor>& values) {
  const auto& vars = program_.model->variables();
  for (size_t r = 0; r < replicas_.size(); ++r) {
    for (size_t i = 0; i < vars.size(); ++i) {
      replicas_[r].values[i] = (vars[i].trainable || r == 0) ? values[i] : values[i].clone();
    }
  }
}

void ReplicatedStrategy::refresh_private_copies(const std::vector<Tensor>& values) {
  const auto& vars = program_.model->variables();
  for (size_t r = 1; r < replicas_.size(); ++r) {
    for (size_t i = 0; i < vars.size(); ++i) {
      if (!vars[i].trainable) replicas_[r].values[i].copy_from(values[i]);
    }
  }
}

StepOutput ReplicatedStrategy::eval_step(const Batch& batch) {
  return sum_outputs(on_shards(batch.size(), [&](int r, int64_t begin, int64_t end) {
    return run_replica(program_, replicas_[static_cast<size_t>(r)], batch, begin, end, 0, false, 1.0f);
  }));
}

Tensor ReplicatedStrategy::predict_step(const Batch& batch) {
  Shape shape = {batch.size()};
  const Shape& out_shape = program_.model->output_shape();
  shape.insert(shape.end(), out_shape.begin(), out_shape.end());
  Tensor out(shape);
  on_shards(batch.size(), [&](int r, int64_t begin, int64_t end) {
    if (end > begin) {
      ForwardContext ctx{false, program_.seed, 0, begin};
      const Tensor p = program_.loss->predictions(
          program_.model->forward(ctx, replicas_[static_cast<size_t>(r)], batch.features.rows(begin, end)));
      out.rows(begin, end).copy_from(p);
    }
    return StepOutput{};
  });
  return out;
}

}  // namespace dtrain
