// The buffers of one replica's activations and activation gradients. A model
// hands a buffer back as soon as nobody reads it any more (an activation past
// its last reader that no backward needs, an output's gradient after its
// layer's backward) and later layers take it again, so a replica holds about
// the most that is alive at once rather than a buffer per layer and
// direction (engine/model/memory_plan.hpp plans the same sequence).
// Not thread-safe: one per ReplicaState.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "engine/devices.hpp"
#include "engine/dtype.hpp"
#include "engine/tensor.hpp"

namespace dtrain {

class BufferPool {
 public:
  // A buffer of `shape`: a free one of the same element count, dtype and
  // device when there is one (its old values are left), else a new one.
  Tensor take(const Shape& shape, DType dtype, const Device& device);
  // Takes t's storage back when no other tensor views it (a view keeps it
  // for itself otherwise); t keeps its shape without storage (released()).
  void give(Tensor& t);
  // Starts a forward pass: frees the free buffers that no take() of the last
  // two passes used (a short final batch's sizes do not stay held).
  void new_pass();

  // Bytes of the buffers this pool made that still exist (free, or in use
  // by the replica), and the most there were at once (at take()).
  size_t bytes_held() const;
  // bytes_held() less the free buffers': what the replica's tensors hold now.
  size_t bytes_in_use() const;
  size_t peak_bytes() const { return peak_; }
  int64_t buffers_made() const { return made_; }
  size_t free_buffers() const { return free_.size(); }

 private:
  struct Free {
    Tensor buffer;
    int64_t used_pass = 0;  // the pass that last gave it back or made it
  };
  std::vector<Free> free_;
  std::vector<std::weak_ptr<const Storage>> made_storage_;
  int64_t pass_ = 0;
  int64_t made_ = 0;
  size_t peak_ = 0;
};

}  // namespace dtrain
