// mirrored strategy: per-device copies kept identical by a bucketed all-reduce.
#include "strategies/mirrored.hpp"

#include <cassert>
#include <cstring>

#include "strategies/replica_step.hpp"

namespace dtrain {

MirroredStrategy::MirroredStrategy(Program& program, std::vector<Device> devices, double bucket_bytes)
    : ReplicatedStrategy(program, std::move(devices)),
      buckets_(make_buckets(*program.model, bucket_bytes)),
      reducer_(std::make_unique<InProcessAllReduce>(buckets_)),
      slots_(replicas_.size()) {}

MirroredStrategy::MirroredStrategy(Program& program, std::vector<Device> devices, double bucket_bytes,
                                   const std::function<CrossReduce(const GradBuckets&)>& make_cross)
    : ReplicatedStrategy(program, std::move(devices)),
      buckets_(make_buckets(*program.model, bucket_bytes)),
      reducer_(std::make_unique<InProcessAllReduce>(buckets_, make_cross(buckets_))),
      slots_(replicas_.size()) {}

std::vector<Tensor*> MirroredStrategy::state_tensors(size_t replica) {
  std::vector<Tensor*> out;
  for (Tensor& t : replicas_[replica].values) out.push_back(&t);
  for (auto& var_slots : slots_[replica]) {
    for (Tensor& t : var_slots) out.push_back(&t);
  }
  return out;
}

Status MirroredStrategy::create_variables() {
  if (Status s = initialize_variables(program_, replicas_[0].ctx.device, replicas_[0].values, slots_[0]); !s) return s;
  for (size_t r = 1; r < replicas_.size(); ++r) {
    const Device& d = replicas_[r].ctx.device;
    for (size_t i = 0; i < replicas_[0].values.size(); ++i) replicas_[r].values[i] = copy_on(replicas_[0].values[i], d);
    slots_[r] = slots_[0];
    for (auto& var_slots : slots_[r]) {
      for (Tensor& s : var_slots) s = copy_on(s, d);
    }
  }
  return Status::Ok();
}

std::vector<std::pair<std::string, Tensor>> MirroredStrategy::logical_state() {
  return state_list(program_, replicas_[0].values, slots_[0]);
}

Status MirroredStrategy::restore(const CheckpointData& ckpt) {
  for (size_t r = 0; r < replicas_.size(); ++r) {
    if (Status s = assign_state(program_, ckpt, replicas_[r].values, slots_[r]); !s) return s;
  }
  return Status::Ok();
}

void MirroredStrategy::broadcast_from_first(bool non_trainable_only) {
  const auto& vars = program_.model->variables();
  for (size_t r = 1; r < replicas_.size(); ++r) {
    for (size_t i = 0; i < vars.size(); ++i) {
      if (!non_trainable_only || !vars[i].trainable) replicas_[r].values[i].copy_from(replicas_[0].values[i]);
    }
  }
}

bool MirroredStrategy::copies_identical() const {
  const UncountedCopies not_a_step_transfer;
  for (size_t r = 1; r < replicas_.size(); ++r) {
    for (size_t i = 0; i < replicas_[0].values.size(); ++i) {
      const Tensor a = replicas_[0].values[i].to_host();
      const Tensor b = replicas_[r].values[i].to_host();
      if (a.numel() != b.numel() || std::memcmp(a.data(), b.data(), a.bytes()) != 0) return false;
    }
  }
  return true;
}

void MirroredStrategy::abandon_step() {
  ReplicatedStrategy::abandon_step();
  reducer_->abandon();
}

StepOutput MirroredStrategy::train_step(const Batch& batch, int64_t step, float lr) {
  return mirrored_step(batch, step, lr, program_.grad_scale(batch.size()));
}

StepOutput MirroredStrategy::mirrored_step(const Batch& batch, int64_t step, float lr, float scale) {
  reducer_->begin_step(replica_ptrs_, program_.profiler);
  const auto outs = on_shards(batch.size(), [&](int r, int64_t begin, int64_t end) {
    ReplicaState& rs = replicas_[static_cast<size_t>(r)];
    StepOutput out;
    if (end <= begin) {
      // An empty shard contributes zero gradients to every bucket.
      for (Tensor& g : rs.grads) {
        if (!g.empty()) g.zero();
      }
      for (size_t b = 0; b < buckets_.vars.size(); ++b) reducer_->arrive(b);
    } else {
      out = run_replica_accumulated(program_, rs, batch, begin, end, step, scale, [&](size_t layer) {
        for (size_t b : buckets_.after_layer[layer]) reducer_->arrive(b);
      });
    }
    if (optimizer_per_variable(program_)) {
      // Each bucket's variables are updated as soon as it is reduced, while
      // the communication thread reduces the later ones. After a failed
      // cross-worker reduction the caller reads reducer_->error() and ends
      // the process (exit 4) before anything reads or saves the variables.
      for (size_t b = 0; b < buckets_.vars.size(); ++b) {
        reducer_->wait_bucket(b, r);
        if (reducer_->error()) return out;
        apply_gradients_to(program_, rs.ctx, rs.values, rs.grads, slots_[static_cast<size_t>(r)], step, lr,
                           buckets_.vars[b]);
      }
      if (r == 0) applied_ = true;
      return out;
    }
    reducer_->wait_all(r);
    // A failed cross-worker reduction leaves the gradients partial: the
    // caller reads reducer_->error() and stops before using the variables.
    if (reducer_->error()) return out;
    // Every replica holds the same reduced gradients, so every replica
    // reaches the same decision.
    const bool applied = apply_gradients(program_, rs.ctx, rs.values, rs.grads, slots_[static_cast<size_t>(r)], step, lr);
    if (r == 0) applied_ = applied;
    return out;
  });
  program_.loss_scale.update(applied_);
  // batch_norm statistics were updated from each replica's own shard: the
  // first replica's are the ones kept (DESIGN.md: other fields from replica 0).
  broadcast_from_first(true);
  assert(copies_identical() && "mirrored copies diverged");
  return sum_outputs(outs);
}

}  // namespace dtrain
