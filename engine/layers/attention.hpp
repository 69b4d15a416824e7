// Multi-head attention with Keras MultiHeadAttention semantics: the
// three-input core (query, key, value) and the layer multi_head_attention,
// on one input (self-attention: query = key = value = its input) or, like
// Keras's call(query, value, key=None), on inputs [query, value] (key =
// value) or [query, value, key].
//
// Per example, with H heads, key_dim Dk and value_dim Dv:
//   Q = query Wq + bq (Tq, H, Dk)   K = key Wk + bk (Tk, H, Dk)   V = value Wv + bv (Tk, H, Dv)
//   S_h = (Q_h / sqrt(Dk)) K_h^T (Tq, Tk) per head h, keys j > i masked out when causal
//   P_h = softmax over keys of S_h, then dropout of P_h (training only)
//   O = [P_h V_h over h] (Tq, H, Dv)   y = O Wo + bo (Tq, d_out)
// Weights keep Keras's names and layouts: query/kernel (dq, H, Dk), query/bias
// (H, Dk), key/kernel (dk, H, Dk), key/bias (H, Dk), value/kernel (dv, H, Dv),
// value/bias (H, Dv), attention_output/kernel (H, Dv, d_out),
// attention_output/bias (d_out). The products are ops::matmul (batched over
// examples and heads), so under a bfloat16 policy their operands are rounded
// to bfloat16; masking, softmax and dropout compute in float32.
#pragma once

#include <memory>
#include <optional>

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/base/job_spec.hpp"
#include "engine/layer.hpp"

namespace dtrain {

struct AttentionOptions {
  int64_t num_heads = 1;   // H >= 1
  int64_t key_dim = 1;     // Dk >= 1: size of each head of query and key
  int64_t value_dim = 0;   // Dv: size of each head of value; 0 means key_dim
  int64_t output_dim = 0;  // d_out: last dimension of y; 0 means the query's (dq)
  float dropout = 0.0f;    // rate of dropout on the attention probabilities, in [0, 1)
  bool use_bias = true;    // the four projections add biases
  bool causal = false;     // query position i attends only to key positions j <= i
  InitializerSpec kernel_init;                    // glorot_uniform
  InitializerSpec bias_init{"zeros", 0.0f};
};

// The attention itself, on three inputs. Immutable after build(); per-call
// state lives in the caller's LayerCache, as for a Layer: the core uses
// saved[0, 16) and ints[0], so a layer wrapping it keeps its own buffers after.
//   query (B, Tq, dq)   key (B, Tk, dk)   value (B, Tk, dv)   y (B, Tq, d_out)
// The attention-dropout mask of example b (global index ctx.example_offset + b)
// element (h, i, j) is dropout_mask(key(seed, step, name), example)[(h*Tq + i)*Tk + j]
// (engine/layers/dropout.hpp), so it does not depend on how the batch is split.
class AttentionCore {
 public:
  // `name` (the layer's name in the model) salts the dropout key.
  // REQUIRES: options valid (heads, key_dim >= 1; value_dim, output_dim >= 0;
  // 0 <= dropout < 1): the registry checks them.
  AttentionCore(AttentionOptions options, std::string name);

  // Shapes per example (no batch dimension). Returns y's (Tq, d_out), or a
  // config error when an input is not (time, features) or key and value
  // differ in length.
  Result<Shape> build(const Shape& query, const Shape& key, const Shape& value);
  // Valid after build(), in Keras's order; biases only with use_bias.
  std::vector<ParamSpec> params() const;
  static std::vector<std::string_view> ops() { return {"matmul", "sum_rows", "attention", "dropout"}; }
  const AttentionOptions& options() const { return o_; }
  // Valid after build(): Dv and d_out with their defaults resolved.
  int64_t value_dim() const { return value_dim_; }
  int64_t output_dim() const { return out_dim_; }

  // y is (re)allocated as (B, Tq, d_out). Every tensor lives on ctx.ops->device.
  void forward(const ForwardContext& ctx, std::span<const Tensor> params, const Tensor& query, const Tensor& key,
               const Tensor& value, Tensor& y, LayerCache& cache) const;
  // dy: (B, Tq, d_out). Overwrites grads[i] for every param and, for each of
  // dquery (B, Tq, dq), dkey (B, Tk, dk), dvalue (B, Tk, dv) that is not null,
  // that input's gradient. The three must be distinct tensors. key/bias's
  // gradient is exactly zero (softmax ignores a shift shared by a row; the
  // variable stays, as in Keras, so the weights keep Keras's layout).
  // REQUIRES: forward on the same inputs with this cache.
  void backward(const ForwardContext& ctx, std::span<const Tensor> params, std::span<Tensor> grads,
                const Tensor& query, const Tensor& key, const Tensor& value, const Tensor& dy, Tensor* dquery,
                Tensor* dkey, Tensor* dvalue, const LayerCache& cache) const;

  // The Philox key of the attention-dropout masks at (seed, step).
  uint64_t mask_key(uint64_t seed, int64_t step) const;

 private:
  struct Dims;
  Dims dims(int64_t batch) const;

  AttentionOptions o_;
  std::string name_;
  uint64_t salt_ = 0;
  int64_t dq_ = 0, dk_ = 0, dv_ = 0;  // input feature sizes
  int64_t tq_ = 0, tk_ = 0;           // query and key/value lengths
  int64_t value_dim_ = 0, out_dim_ = 0;
};

// multi_head_attention on `arity` inputs (1, 2 or 3):
//   1: self-attention on x (B, T, d); y (B, T, d_out). The input gradient is
//      the sum of the core's query, key and value gradients.
//   2: [query (B, Tq, dq), value (B, Tk, dv)], the value also the key.
//   3: [query, value, key (B, Tk, dk)].
class MultiHeadAttention : public Layer {
 public:
  MultiHeadAttention(AttentionOptions options, std::string name, int arity = 1);

  std::string type() const override { return "multi_head_attention"; }
  std::vector<std::string_view> ops() const override { return AttentionCore::ops(); }
  int arity() const override { return arity_; }
  // REQUIRES: input is (time, features); anything else is a config error.
  Result<Shape> build(const Shape& input) override;
  std::vector<ParamSpec> params() const override { return core_.params(); }
  void forward(const ForwardContext& ctx, std::span<Tensor> params, const Tensor& x, Tensor& y,
               LayerCache& cache) const override;
  void backward(const ForwardContext& ctx, std::span<const Tensor> params, std::span<Tensor> grads, const Tensor& x,
                const Tensor& y, const Tensor& dy, Tensor* dx, const LayerCache& cache) const override;
  // Two or three inputs: [query, value] or [query, value, key].
  Result<Shape> build_inputs(std::span<const Shape> inputs) override;
  void forward_inputs(const ForwardContext& ctx, std::span<Tensor> params, std::span<const Tensor* const> xs,
                      Tensor& y, LayerCache& cache) const override;
  void backward_inputs(const ForwardContext& ctx, std::span<const Tensor> params, std::span<Tensor> grads,
                       std::span<const Tensor* const> xs, const Tensor& y, const Tensor& dy,
                       std::span<Tensor* const> dxs, const LayerCache& cache) const override;

  const AttentionCore& core() const { return core_; }

 private:
  AttentionCore core_;
  int arity_;
};

// A multi_head_attention layer's options in the job (Keras MultiHeadAttention's argument names).
struct AttentionSpec {
  int64_t num_heads = 0;
  int64_t key_dim = 0;                 // size of each query and key head
  std::optional<int64_t> value_dim;    // size of each value head; null = key_dim
  std::optional<int64_t> output_shape; // last dimension of the output; null = the input's
  float dropout = 0.0f;                // dropout rate of the attention probabilities
  bool use_bias = true;
  bool use_causal_mask = false;        // position i attends only to positions <= i
  InitializerSpec kernel_initializer;
  InitializerSpec bias_initializer{"zeros", 0.0f};
};
std::span<const Field> attention_fields();
Result<std::unique_ptr<Layer>> make_multi_head_attention(const LayerSpec& spec);

}  // namespace dtrain
