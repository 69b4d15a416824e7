// Multi-head attention: the projections and the per-head products are
// ops::matmul (the per-head ones batched over examples x heads, on head-major
// copies); the head permutes and the masked softmax are the ops
// ops::attention_* (engine/ops/layer_ops.hpp, CPU kernels in
// engine/kernels/attention.cpp), as is the sum of an input's gradients;
// attention dropout is ops::dropout, the dropout layer's op.
#include "engine/layers/attention.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <cmath>
#include <utility>

#include "engine/kernels/matmul.hpp"
#include "engine/layers/dropout.hpp"
#include "engine/layers/layer_util.hpp"
#include "engine/layers/registry.hpp"
#include "engine/ops/core.hpp"
#include "engine/ops/layer_ops.hpp"
#include "engine/ops/library.hpp"
#include "engine/rng.hpp"

namespace dtrain {

struct AttentionCore::Dims {
  int64_t b, tq, tk, h, dk, dv;  // batch, lengths, heads, head sizes
  int64_t out;                   // d_out
};

namespace {

// LayerCache slots of the core. Forward fills the [saved] ones for backward;
// the others are buffers reused call after call (backward's are sized by a
// training forward).
enum Slot : size_t {
  kQTokens,    // (B*Tq, H*Dk) query projection; backward: dQ
  kKTokens,    // (B*Tk, H*Dk) key projection; backward: dK
  kVTokens,    // (B*Tk, H*Dv) value projection; backward: dV
  kQHeads,     // (B, H, Tq, Dk) Q / sqrt(Dk) [saved]
  kKHeads,     // (B, H, Tk, Dk) [saved]
  kVHeads,     // (B, H, Tk, Dv) [saved]
  kProbs,      // (B, H, Tq, Tk) P, the attention probabilities [saved]
  kMask,       // (B, H, Tq, Tk) dropout mask, 0 or 1/(1-rate) [saved when dropout ran]
  kDropped,    // (B, H, Tq, Tk) P * mask [saved when dropout ran]
  kOHeads,     // (B, H, Tq, Dv) per-head outputs; backward: their gradient
  kOTokens,    // (B*Tq, H*Dv) the same, token-major: the output projection's input [saved]
  kDOTokens,   // backward: (B*Tq, H*Dv) gradient of kOTokens
  kDScores,    // backward: (B, H, Tq, Tk) gradient of the dropped probabilities, then of the scores
  kDQHeads,    // backward: (B, H, Tq, Dk)
  kDKHeads,    // backward: (B, H, Tk, Dk)
  kDVHeads,    // backward: (B, H, Tk, Dv)
  kNumSlots,
};
// The self-attention layer's own slots, after the core's: the key and value
// input gradients before they are summed into dx.
constexpr size_t kDKeyInput = kNumSlots, kDValueInput = kNumSlots + 1, kLayerSlots = kNumSlots + 2;

// The cache's buffer `slot` as an f32 tensor of `shape` on like's device,
// kept across calls (forward only: the cache is mutable there).
Tensor& keep(LayerCache& cache, size_t slot, const Shape& shape, const Tensor& like) {
  prepare_output(cache.saved[slot], shape, {&like});
  return cache.saved[slot];
}

// Backward's buffer: the cache's `slot` (a handle sharing its storage) when a
// forward sized it so, else a fresh tensor for this call only.
Tensor scratch(const LayerCache& cache, size_t slot, const Shape& shape, const Device& device) {
  const Tensor& t = cache.saved[slot];
  if (!t.empty() && t.dtype() == DType::f32 && t.device() == device && t.numel() == num_elements(shape)) {
    return t.reshaped(shape);
  }
  return Tensor::empty(shape, DType::f32, device);
}

kernels::MatmulShape batched(int64_t m, int64_t n, int64_t k, bool trans_a, bool trans_b, int64_t batch) {
  kernels::MatmulShape s{m, n, k, trans_a, trans_b};
  s.batch = batch;
  return s;
}

// One projection's backward: x (rows, in) its input, dt (rows, cols) the
// gradient of x W + b. Overwrites dW (W's shape), db (b's shape, cols
// elements) when not null, and dx = dt W^T (rows * in elements, shaped
// dx_shape) when not null.
void projection_backward(const ops::Context& oc, const Tensor& x, const Tensor& dt, const Tensor& w, const Tensor* b,
                         Tensor& dw, Tensor* db, Tensor* dx, const Shape& dx_shape) {
  const int64_t rows = dt.dim(0), cols = dt.dim(1), in = x.dim(1);
  assert(x.dim(0) == rows && w.numel() == in * cols && num_elements(dx_shape) == rows * in);
  prepare_output(dw, w.shape(), {&dt});
  ops::matmul(oc, {in, cols, rows, true, false}, x, dt, nullptr, dw);
  if (db != nullptr) {
    assert(b != nullptr && b->numel() == cols);
    prepare_output(*db, b->shape(), {&dt});
    ops::sum_rows(oc, dt, *db);
  }
  if (dx != nullptr) {
    prepare_output(*dx, dx_shape, {&dt});
    ops::matmul(oc, {rows, in, cols, false, true}, dt, w, nullptr, *dx);
  }
}

}  // namespace

AttentionCore::AttentionCore(AttentionOptions options, std::string name)
    : o_(std::move(options)), name_(std::move(name)) {
  assert(o_.num_heads >= 1 && o_.key_dim >= 1 && o_.value_dim >= 0 && o_.output_dim >= 0);
  assert(o_.dropout >= 0.0f && o_.dropout < 1.0f);
  salt_ = hash64(name_, hash64("multi_head_attention"));
  value_dim_ = o_.value_dim > 0 ? o_.value_dim : o_.key_dim;
}

Result<Shape> AttentionCore::build(const Shape& query, const Shape& key, const Shape& value) {
  const std::pair<const char*, const Shape*> inputs[] = {{"query", &query}, {"key", &key}, {"value", &value}};
  for (const auto& [what, s] : inputs) {
    if (s->size() != 2) {
      return config_error(fmt::format("multi_head_attention: the {} must be a sequence (time, features); got shape {}",
                                      what, shape_str(*s)));
    }
  }
  if (key[0] != value[0]) {
    return config_error(fmt::format(
        "multi_head_attention: key and value must have the same length (time steps); got key {} and value {}",
        shape_str(key), shape_str(value)));
  }
  tq_ = query[0];
  tk_ = key[0];
  dq_ = query[1];
  dk_ = key[1];
  dv_ = value[1];
  out_dim_ = o_.output_dim > 0 ? o_.output_dim : dq_;
  return Shape{tq_, out_dim_};
}

std::vector<ParamSpec> AttentionCore::params() const {
  const int64_t h = o_.num_heads, dk = o_.key_dim, dv = value_dim_;
  std::vector<ParamSpec> p;
  auto add = [&](const char* scope, Shape kernel, Shape bias) {
    p.push_back({fmt::format("{}/kernel", scope), std::move(kernel), o_.kernel_init, true});
    if (o_.use_bias) p.push_back({fmt::format("{}/bias", scope), std::move(bias), o_.bias_init, true});
  };
  add("query", {dq_, h, dk}, {h, dk});
  add("key", {dk_, h, dk}, {h, dk});
  add("value", {dv_, h, dv}, {h, dv});
  add("attention_output", {h, dv, out_dim_}, {out_dim_});
  return p;
}

uint64_t AttentionCore::mask_key(uint64_t seed, int64_t step) const { return dropout_key(seed, step, salt_); }

AttentionCore::Dims AttentionCore::dims(int64_t batch) const {
  return {batch, tq_, tk_, o_.num_heads, o_.key_dim, value_dim_, out_dim_};
}

// params: [query/kernel, query/bias, key/kernel, key/bias, value/kernel,
// value/bias, attention_output/kernel, attention_output/bias], the biases
// only with use_bias; kernel(i) / bias(i) index projection i of the four.
void AttentionCore::forward(const ForwardContext& ctx, std::span<const Tensor> params, const Tensor& query,
                            const Tensor& key, const Tensor& value, Tensor& y, LayerCache& cache) const {
  assert(query.rank() == 3 && query.dim(1) == tq_ && query.dim(2) == dq_);
  assert(key.rank() == 3 && key.dim(0) == query.dim(0) && key.dim(1) == tk_ && key.dim(2) == dk_);
  assert(value.rank() == 3 && value.dim(0) == query.dim(0) && value.dim(1) == tk_ && value.dim(2) == dv_);
  const Dims d = dims(query.dim(0));
  const ops::Context& oc = *ctx.ops;
  const size_t per = o_.use_bias ? 2 : 1;
  auto kernel = [&](size_t i) -> const Tensor& { return params[i * per]; };
  auto bias = [&](size_t i) { return o_.use_bias ? &params[i * per + 1] : nullptr; };
  if (cache.saved.size() < kNumSlots) cache.saved.resize(kNumSlots);
  cache.ints.assign(1, 0);

  // The three projections, then head-major copies (the query scaled by 1/sqrt(Dk)).
  Tensor& qt = keep(cache, kQTokens, {d.b * d.tq, d.h * d.dk}, query);
  Tensor& kt = keep(cache, kKTokens, {d.b * d.tk, d.h * d.dk}, query);
  Tensor& vt = keep(cache, kVTokens, {d.b * d.tk, d.h * d.dv}, query);
  ops::matmul(oc, {d.b * d.tq, d.h * d.dk, dq_}, query, kernel(0), bias(0), qt);
  ops::matmul(oc, {d.b * d.tk, d.h * d.dk, dk_}, key, kernel(1), bias(1), kt);
  ops::matmul(oc, {d.b * d.tk, d.h * d.dv, dv_}, value, kernel(2), bias(2), vt);
  Tensor& qh = keep(cache, kQHeads, {d.b, d.h, d.tq, d.dk}, query);
  Tensor& kh = keep(cache, kKHeads, {d.b, d.h, d.tk, d.dk}, query);
  Tensor& vh = keep(cache, kVHeads, {d.b, d.h, d.tk, d.dv}, query);
  const float q_scale = 1.0f / std::sqrt(static_cast<float>(d.dk));
  ops::attention_permute_heads(oc, qt, qh, d.b, d.tq, d.h, d.dk, q_scale, true);
  ops::attention_permute_heads(oc, kt, kh, d.b, d.tk, d.h, d.dk, 1.0f, true);
  ops::attention_permute_heads(oc, vt, vh, d.b, d.tk, d.h, d.dv, 1.0f, true);

  // Scores and probabilities, per (example, head): P = softmax(Q K^T).
  Tensor& p = keep(cache, kProbs, {d.b, d.h, d.tq, d.tk}, query);
  ops::matmul(oc, batched(d.tq, d.tk, d.dk, false, true, d.b * d.h), qh, kh, nullptr, p);
  ops::attention_softmax_rows(oc, p, d.tq, d.tk, o_.causal);
  const Tensor* attn = &p;
  if (ctx.training && o_.dropout > 0.0f) {
    cache.ints[0] = 1;
    Tensor& mask = keep(cache, kMask, p.shape(), query);
    Tensor& dropped = keep(cache, kDropped, p.shape(), query);
    ops::dropout(oc, p, mask_key(ctx.seed, ctx.step), ctx.example_offset, o_.dropout, mask, dropped);
    attn = &dropped;
  }

  // Per-head outputs P V, back to (B*Tq, H*Dv), then the output projection.
  Tensor& oh = keep(cache, kOHeads, {d.b, d.h, d.tq, d.dv}, query);
  ops::matmul(oc, batched(d.tq, d.dv, d.tk, false, false, d.b * d.h), *attn, vh, nullptr, oh);
  Tensor& ot = keep(cache, kOTokens, {d.b * d.tq, d.h * d.dv}, query);
  ops::attention_permute_heads(oc, oh, ot, d.b, d.tq, d.h, d.dv, 1.0f, false);
  prepare_output(y, {d.b, d.tq, d.out}, {&query, &key, &value});
  ops::matmul(oc, {d.b * d.tq, d.out, d.h * d.dv}, ot, kernel(3), bias(3), y);

  if (ctx.training) {  // backward's buffers, kept for the steps to come
    keep(cache, kDOTokens, ot.shape(), query);
    keep(cache, kDScores, p.shape(), query);
    keep(cache, kDQHeads, qh.shape(), query);
    keep(cache, kDKHeads, kh.shape(), query);
    keep(cache, kDVHeads, vh.shape(), query);
  }
}

void AttentionCore::backward(const ForwardContext& ctx, std::span<const Tensor> params, std::span<Tensor> grads,
                             const Tensor& query, const Tensor& key, const Tensor& value, const Tensor& dy,
                             Tensor* dquery, Tensor* dkey, Tensor* dvalue, const LayerCache& cache) const {
  const Dims d = dims(query.dim(0));
  assert(dy.rank() == 3 && dy.dim(0) == d.b && dy.dim(1) == d.tq && dy.dim(2) == d.out);
  assert(cache.saved.size() >= kNumSlots && cache.ints.size() == 1);
  const ops::Context& oc = *ctx.ops;
  const Device& dev = dy.device();
  const size_t per = o_.use_bias ? 2 : 1;
  auto kernel = [&](size_t i) -> const Tensor& { return params[i * per]; };
  auto bias = [&](size_t i) { return o_.use_bias ? &params[i * per + 1] : nullptr; };
  auto dkernel = [&](size_t i) -> Tensor& { return grads[i * per]; };
  auto dbias = [&](size_t i) { return o_.use_bias ? &grads[i * per + 1] : nullptr; };
  const bool dropped = cache.ints[0] == 1;
  const Tensor& p = cache.saved[kProbs];
  const Tensor& attn = dropped ? cache.saved[kDropped] : p;
  const int64_t heads = d.b * d.h;

  // Output projection: y = O Wo + bo with O (B*Tq, H*Dv).
  const Tensor dy2 = dy.reshaped({d.b * d.tq, d.out});
  Tensor dot = scratch(cache, kDOTokens, {d.b * d.tq, d.h * d.dv}, dev);
  const Tensor& ot = cache.saved[kOTokens];
  projection_backward(oc, ot, dy2, kernel(3), bias(3), dkernel(3), dbias(3), &dot, ot.shape());
  Tensor doh = scratch(cache, kOHeads, {d.b, d.h, d.tq, d.dv}, dev);
  ops::attention_permute_heads(oc, dot, doh, d.b, d.tq, d.h, d.dv, 1.0f, true);

  // O_h = P_h V_h: dP_h = dO_h V_h^T and dV_h = P_h^T dO_h (P after dropout).
  Tensor ds = scratch(cache, kDScores, {d.b, d.h, d.tq, d.tk}, dev);
  ops::matmul(oc, batched(d.tq, d.tk, d.dv, false, true, heads), doh, cache.saved[kVHeads], nullptr, ds);
  Tensor dvh = scratch(cache, kDVHeads, {d.b, d.h, d.tk, d.dv}, dev);
  ops::matmul(oc, batched(d.tk, d.dv, d.tq, true, false, heads), attn, doh, nullptr, dvh);
  ops::attention_softmax_backward(oc, p, dropped ? &cache.saved[kMask] : nullptr, ds, d.tk);

  // S_h = Qs_h K_h^T with Qs = Q / sqrt(Dk): dQs_h = dS_h K_h, dK_h = dS_h^T Qs_h.
  Tensor dqh = scratch(cache, kDQHeads, {d.b, d.h, d.tq, d.dk}, dev);
  ops::matmul(oc, batched(d.tq, d.dk, d.tk, false, false, heads), ds, cache.saved[kKHeads], nullptr, dqh);
  Tensor dkh = scratch(cache, kDKHeads, {d.b, d.h, d.tk, d.dk}, dev);
  ops::matmul(oc, batched(d.tk, d.dk, d.tq, true, false, heads), ds, cache.saved[kQHeads], nullptr, dkh);

  // Back to token-major, then the three input projections.
  Tensor dqt = scratch(cache, kQTokens, {d.b * d.tq, d.h * d.dk}, dev);
  Tensor dkt = scratch(cache, kKTokens, {d.b * d.tk, d.h * d.dk}, dev);
  Tensor dvt = scratch(cache, kVTokens, {d.b * d.tk, d.h * d.dv}, dev);
  const float q_scale = 1.0f / std::sqrt(static_cast<float>(d.dk));
  ops::attention_permute_heads(oc, dqh, dqt, d.b, d.tq, d.h, d.dk, q_scale, false);
  ops::attention_permute_heads(oc, dkh, dkt, d.b, d.tk, d.h, d.dk, 1.0f, false);
  ops::attention_permute_heads(oc, dvh, dvt, d.b, d.tk, d.h, d.dv, 1.0f, false);
  projection_backward(oc, query.reshaped({d.b * d.tq, dq_}), dqt, kernel(0), bias(0), dkernel(0), dbias(0), dquery,
                      query.shape());
  // key/bias: adding q_i . b_k to every score of row i leaves the softmax
  // unchanged, so its gradient is exactly zero (summing dK's rows would give
  // rounding noise, which Adam would scale up to full-size steps).
  projection_backward(oc, key.reshaped({d.b * d.tk, dk_}), dkt, kernel(1), nullptr, dkernel(1), nullptr, dkey,
                      key.shape());
  if (Tensor* db = dbias(1)) {
    prepare_output(*db, params[1 * per + 1].shape(), {&dkt});
    db->zero();
  }
  projection_backward(oc, value.reshaped({d.b * d.tk, dv_}), dvt, kernel(2), bias(2), dkernel(2), dbias(2), dvalue,
                      value.shape());
}

MultiHeadAttention::MultiHeadAttention(AttentionOptions options, std::string name, int arity)
    : core_(std::move(options), std::move(name)), arity_(arity) {
  assert(arity >= 1 && arity <= 3);
}

Result<Shape> MultiHeadAttention::build(const Shape& input) {
  if (input.size() != 2) {
    return config_error(fmt::format(
        "multi_head_attention expects a sequence input (time, features); got shape {}; add {{type: reshape, "
        "target_shape: [time, features]}} before it",
        shape_str(input)));
  }
  return core_.build(input, input, input);
}

void MultiHeadAttention::forward(const ForwardContext& ctx, std::span<Tensor> params, const Tensor& x, Tensor& y,
                                 LayerCache& cache) const {
  if (cache.saved.size() < kLayerSlots) cache.saved.resize(kLayerSlots);
  core_.forward(ctx, params, x, x, x, y, cache);
  if (ctx.training) {
    keep(cache, kDKeyInput, x.shape(), x);
    keep(cache, kDValueInput, x.shape(), x);
  }
}

void MultiHeadAttention::backward(const ForwardContext& ctx, std::span<const Tensor> params, std::span<Tensor> grads,
                                  const Tensor& x, const Tensor&, const Tensor& dy, Tensor* dx,
                                  const LayerCache& cache) const {
  if (dx == nullptr) {
    core_.backward(ctx, params, grads, x, x, x, dy, nullptr, nullptr, nullptr, cache);
    return;
  }
  Tensor dkey = scratch(cache, kDKeyInput, x.shape(), dy.device());
  Tensor dvalue = scratch(cache, kDValueInput, x.shape(), dy.device());
  core_.backward(ctx, params, grads, x, x, x, dy, dx, &dkey, &dvalue, cache);
  // query = key = value = x: dx is the sum of the three.
  ops::attention_add_input_grads(*ctx.ops, *dx, dkey, &dvalue);
}

Result<Shape> MultiHeadAttention::build_inputs(std::span<const Shape> inputs) {
  if (inputs.size() == 1) return build(inputs[0]);
  // Keras's call(query, value, key=None): the key defaults to the value.
  return core_.build(inputs[0], inputs.size() == 3 ? inputs[2] : inputs[1], inputs[1]);
}

void MultiHeadAttention::forward_inputs(const ForwardContext& ctx, std::span<Tensor> params,
                                        std::span<const Tensor* const> xs, Tensor& y, LayerCache& cache) const {
  if (xs.size() == 1) {
    forward(ctx, params, *xs[0], y, cache);
    return;
  }
  if (cache.saved.size() < kLayerSlots) cache.saved.resize(kLayerSlots);
  const Tensor& value = *xs[1];
  core_.forward(ctx, params, *xs[0], xs.size() == 3 ? *xs[2] : value, value, y, cache);
  if (ctx.training && xs.size() == 2) keep(cache, kDKeyInput, value.shape(), value);
}

void MultiHeadAttention::backward_inputs(const ForwardContext& ctx, std::span<const Tensor> params,
                                         std::span<Tensor> grads, std::span<const Tensor* const> xs, const Tensor& y,
                                         const Tensor& dy, std::span<Tensor* const> dxs,
                                         const LayerCache& cache) const {
  if (xs.size() == 1) {
    backward(ctx, params, grads, *xs[0], y, dy, dxs[0], cache);
    return;
  }
  const Tensor& value = *xs[1];
  if (xs.size() == 3) {
    core_.backward(ctx, params, grads, *xs[0], *xs[2], value, dy, dxs[0], dxs[2], dxs[1], cache);
    return;
  }
  Tensor* dvalue = dxs[1];
  if (dvalue == nullptr) {
    core_.backward(ctx, params, grads, *xs[0], value, value, dy, dxs[0], nullptr, nullptr, cache);
    return;
  }
  // The value is also the key: its gradient is the sum of both.
  Tensor dkey = scratch(cache, kDKeyInput, value.shape(), dy.device());
  core_.backward(ctx, params, grads, *xs[0], value, value, dy, dxs[0], &dkey, dvalue, cache);
  ops::attention_add_input_grads(*ctx.ops, *dvalue, dkey, nullptr);
}

std::span<const Field> attention_fields() {
  static const Field kFields[] = {
      field<&AttentionSpec::num_heads>("num_heads", "Number of attention heads.").min(1).need(),
      field<&AttentionSpec::key_dim>(
          "key_dim", "Size of each attention head for query and key; the scores are scaled by 1 / sqrt(key_dim).")
          .min(1)
          .need(),
      field<&AttentionSpec::value_dim>("value_dim", "Size of each attention head for value; null means key_dim.").min(1),
      field<&AttentionSpec::output_shape>(
          "output_shape", "Number of output features per position; null means the input's (its last dimension).")
          .min(1),
      field<&AttentionSpec::dropout>("dropout",
                                     "Dropout rate of the attention probabilities, in training only; the masks depend "
                                     "on (run.seed, step, example), not on the strategy.")
          .min(0)
          .below(1),
      field<&AttentionSpec::use_bias>("use_bias", "Whether the query, key, value and output projections add biases."),
      field<&AttentionSpec::use_causal_mask>(
          "use_causal_mask", "Whether position i attends only to positions up to i (a decoder's causal mask)."),
      field<&AttentionSpec::kernel_initializer>(
          "kernel_initializer",
          "Initializer of the four kernels: a name, or {type: constant, value: x}. Fans follow Keras: a kernel (a, b, "
          "c) has fan_in a*b and fan_out a*c."),
      field<&AttentionSpec::bias_initializer>("bias_initializer",
                                              "Initializer of the four biases: a name, or {type: constant, value: x}."),
  };
  return kFields;
}

Result<std::unique_ptr<Layer>> make_multi_head_attention(const LayerSpec& spec) {
  const auto& s = layer_options<AttentionSpec>(spec);
  const char* where = "multi_head_attention: ";
  if (s.num_heads < 1) return config_error(fmt::format("{}num_heads must be >= 1; got {}", where, s.num_heads));
  if (s.key_dim < 1) return config_error(fmt::format("{}key_dim must be >= 1; got {}", where, s.key_dim));
  if (s.value_dim && *s.value_dim < 1) {
    return config_error(fmt::format("{}value_dim must be >= 1 (or null for key_dim); got {}", where, *s.value_dim));
  }
  if (s.output_shape && *s.output_shape < 1) {
    return config_error(
        fmt::format("{}output_shape must be >= 1 (or null for the input's last dimension); got {}", where,
                    *s.output_shape));
  }
  if (!(s.dropout >= 0.0f && s.dropout < 1.0f)) {
    return config_error(fmt::format("{}dropout must be in [0, 1); got {}", where, s.dropout));
  }
  if (spec.inputs.size() > 3) {
    return config_error(fmt::format("{}takes one input (self-attention), [query, value] or [query, value, key]; "
                                    "got {} inputs",
                                    where, spec.inputs.size()));
  }
  AttentionOptions o;
  o.num_heads = s.num_heads;
  o.key_dim = s.key_dim;
  o.value_dim = s.value_dim.value_or(0);
  o.output_dim = s.output_shape.value_or(0);
  o.dropout = s.dropout;
  o.use_bias = s.use_bias;
  o.causal = s.use_causal_mask;
  o.kernel_init = s.kernel_initializer;
  o.bias_init = s.bias_initializer;
  const int arity = spec.inputs.size() >= 2 ? static_cast<int>(spec.inputs.size()) : 1;
  return std::unique_ptr<Layer>(std::make_unique<MultiHeadAttention>(std::move(o), spec.name, arity));
}

}  // namespace dtrain
