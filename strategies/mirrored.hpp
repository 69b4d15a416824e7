// mirrored (tf.distribute.MirroredStrategy): a copy of every variable and
// optimizer slot on every device; gradients are summed by an all-reduce
// across the devices, bucketed and started during backward; every copy then
// applies the same update, so the copies stay identical (checked in debug
// builds).
#pragma once

#include <functional>
#include <memory>

#include "strategies/all_reduce.hpp"
#include "strategies/replicated.hpp"

namespace dtrain {

class MirroredStrategy : public ReplicatedStrategy {
 public:
  // bucket_bytes: the all-reduce bucket size (strategy.bucket_mb).
  MirroredStrategy(Program& program, std::vector<Device> devices, double bucket_bytes);
  std::string name() const override { return "mirrored"; }
  Status create_variables() override;
  std::vector<std::pair<std::string, Tensor>> logical_state() override;
  Status restore(const CheckpointData& ckpt) override;
  StepOutput train_step(const Batch& batch, int64_t step, float lr) override;
  // Every replica applied the same reduced gradients: replica 0's.
  std::vector<std::pair<std::string, Tensor>> applied_gradients() override {
    return trainable_on_host(program_, replicas_[0].grads);
  }

 protected:
  void abandon_step() override;
  // collective: the same, with a cross-worker stage after each bucket's
  // in-process sum (make_cross receives the buckets).
  MirroredStrategy(Program& program, std::vector<Device> devices, double bucket_bytes,
                   const std::function<CrossReduce(const GradBuckets&)>& make_cross);
  // One step with gradient factor `scale` (train_step uses the batch's size).
  StepOutput mirrored_step(const Batch& batch, int64_t step, float lr, float scale);
  // Replica 0's copy of every variable (then slots), for broadcasts.
  std::vector<Tensor*> state_tensors(size_t replica);

 private:
  // Copies replica 0's variables (all of them, or only non-trainable ones,
  // which forward may update from each replica's own shard) to the others.
  void broadcast_from_first(bool non_trainable_only);
  // Every replica holds the same bits (checked in debug builds only: it
  // reads every copy back to the host).
  bool copies_identical() const;


 protected:
  GradBuckets buckets_;
  std::unique_ptr<InProcessAllReduce> reducer_;

 private:
  std::vector<std::vector<std::vector<Tensor>>> slots_;  // [replica][variable][slot]
  bool applied_ = true;  // replica 0's apply_gradients result this step
};

}  // namespace dtrain
