// ONNX export of multi_head_attention, decomposed as dtrain computes it
// (engine/layers/attention.hpp): projections, Q / sqrt(Dk) times K^T per head,
// the causal mask, softmax over keys, P V, and the output projection.
#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "engine/export/onnx_layers.hpp"
#include "engine/layers/attention.hpp"

namespace dtrain::onnx_export {

namespace {

// x (B, T, d) @ kernel (d, H, D) [+ bias (H, D)] -> heads (B, H, T, D).
std::string project_heads(GraphBuilder& g, const std::string& x, const Tensor& kernel, const Tensor* bias,
                          const std::string& hint) {
  const int64_t d = kernel.dim(0), h = kernel.dim(1), dh = kernel.dim(2);
  std::string y = g.node("MatMul", {x, g.tensor(hint + "/kernel", kernel, {d, h * dh})}, hint + "/matmul");
  if (bias != nullptr) y = g.node("Add", {y, g.tensor(hint + "/bias", *bias, {h * dh})}, hint + "/biased");
  y = g.node("Reshape", {y, g.int64s(hint + "/split_shape", {0, 0, h, dh})}, hint + "/split");
  return g.node("Transpose", {y}, hint + "/heads", {Attr::Ints("perm", {0, 2, 1, 3})});
}

}  // namespace

Result<std::string> export_attention(GraphBuilder& g, const LayerIO& io) {
  const auto& layer = dynamic_cast<const MultiHeadAttention&>(io.view.layer);
  const AttentionCore& core = layer.core();
  const AttentionOptions& o = core.options();
  // Inputs: [x] (self-attention), [query, value] (key = value), [query, value, key].
  const std::string& query = io.inputs[0];
  const std::string& value = io.inputs.size() > 1 ? io.inputs[1] : io.inputs[0];
  const std::string& key = io.inputs.size() > 2 ? io.inputs[2] : value;
  const int64_t tq = io.in_shapes[0][0];
  const int64_t tk = io.in_shapes.size() > 1 ? io.in_shapes[1][0] : tq;
  // params in Keras order: query, key, value, attention_output; kernel then bias (with use_bias).
  const size_t per = o.use_bias ? 2 : 1;
  auto bias = [&](size_t i) { return o.use_bias ? &io.params[i * per + 1] : nullptr; };
  const std::string& name = io.view.name;
  std::string q = project_heads(g, query, io.params[0], bias(0), name + "/query");
  const std::string k = project_heads(g, key, io.params[per], bias(1), name + "/key");
  const std::string v = project_heads(g, value, io.params[2 * per], bias(2), name + "/value");

  q = g.node("Mul", {q, g.floats(name + "/inv_sqrt_dk", {}, {1.0f / std::sqrt(static_cast<float>(o.key_dim))})},
             name + "/query_scaled");
  const std::string kt = g.node("Transpose", {k}, name + "/key_t", {Attr::Ints("perm", {0, 1, 3, 2})});
  std::string s = g.node("MatMul", {q, kt}, name + "/scores");  // (B, H, Tq, Tk)
  if (o.causal) {
    // Query position i keeps keys j <= i; the others get -inf (probability 0).
    std::vector<float> mask(static_cast<size_t>(tq * tk), 0.0f);
    for (int64_t i = 0; i < tq; ++i) {
      for (int64_t j = i + 1; j < tk; ++j) mask[static_cast<size_t>(i * tk + j)] = -std::numeric_limits<float>::infinity();
    }
    s = g.node("Add", {s, g.floats(name + "/causal_mask", {tq, tk}, mask)}, name + "/masked_scores");
  }
  const std::string p = g.node("Softmax", {s}, name + "/probabilities", {Attr::Int("axis", -1)});
  std::string out = g.node("MatMul", {p, v}, name + "/context");  // (B, H, Tq, Dv)
  out = g.node("Transpose", {out}, name + "/context_t", {Attr::Ints("perm", {0, 2, 1, 3})});
  const Tensor& wo = io.params[3 * per];  // (H, Dv, d_out)
  const int64_t h = wo.dim(0), dv = wo.dim(1), dout = wo.dim(2);
  out = g.node("Reshape", {out, g.int64s(name + "/merge_shape", {0, 0, h * dv})}, name + "/merged");
  const bool has_bias = o.use_bias;
  out = g.node("MatMul", {out, g.tensor(name + "/attention_output/kernel", wo, {h * dv, dout})},
               has_bias ? name + "/output_matmul" : name);
  if (has_bias) out = g.node("Add", {out, g.tensor(name + "/attention_output/bias", io.params[3 * per + 1])}, name);
  return out;
}

}  // namespace dtrain::onnx_export
