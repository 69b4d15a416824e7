// Inverted dropout. In training each element is kept with probability
// 1 - rate and scaled by 1 / (1 - rate); at inference y is x (a view).
// The keep/drop decision for element e of global example g at step s is
// CounterRng(key(seed, s, layer), g).uniform(e) >= rate, so it does not
// depend on how the global batch is split among replicas or threads.
//   x, y: (B, ...)   cache.saved[0]: the mask (B, ...), values 0 or 1/(1-rate)
#pragma once

#include <memory>
#include <span>
#include <vector>

#include <string>

#include "engine/base/job_spec.hpp"
#include "engine/layer.hpp"

namespace dtrain {

// The Philox key of a layer's masks at (seed, step); `salt` tells layers apart.
uint64_t dropout_key(uint64_t seed, int64_t step, uint64_t salt);
// The masks themselves are kernels::dropout_mask (engine/kernels/dropout.hpp),
// drawn by ops::dropout, which multi_head_attention's dropout of attention
// probabilities shares.

class Dropout : public Layer {
 public:
  // `name` (the layer's name in the model, may be empty) salts the RNG key so
  // two dropout layers of one model draw different masks.
  // REQUIRES: 0 <= rate < 1.
  Dropout(float rate, std::string name);

  std::string type() const override { return "dropout"; }
  std::vector<std::string_view> ops() const override { return {"dropout", "mul"}; }
  Result<Shape> build(const Shape& input) override;
  void forward(const ForwardContext& ctx, std::span<Tensor> params, const Tensor& x, Tensor& y,
               LayerCache& cache) const override;
  void backward(const ForwardContext& ctx, std::span<const Tensor> params, std::span<Tensor> grads, const Tensor& x,
                const Tensor& y, const Tensor& dy, Tensor* dx, const LayerCache& cache) const override;
  bool backward_reads_inputs() const override { return false; }  // the mask is in the cache
  bool backward_reads_output() const override { return false; }

  // The Philox key of the masks at (seed, step) for this layer (after build).
  uint64_t mask_key(uint64_t seed, int64_t step) const;

 private:
  float rate_;
  std::string name_;
  uint64_t salt_ = 0;
};

// A dropout layer's options in the job (type: dropout).
struct DropoutSpec {
  float rate = 0.0f;
};
std::span<const Field> dropout_fields();
Result<std::unique_ptr<Layer>> make_dropout(const LayerSpec& spec);

}  // namespace dtrain
