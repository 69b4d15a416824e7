// ONNX exporters of the engine's layers (all but attention, in
// onnx_attention.cpp). dtrain keeps images NHWC; ONNX's Conv and pools are
// NCHW, so those nodes sit between two Transposes (ONNX Runtime's optimizer
// cancels the pairs between consecutive convolutions).
#include "engine/export/onnx_layers.hpp"

#include <fmt/format.h>

#include <cmath>

#include "engine/layers/activation.hpp"
#include "engine/layers/batch_norm.hpp"
#include "engine/layers/conv2d.hpp"
#include "engine/layers/global_pool.hpp"
#include "engine/layers/layer_norm.hpp"
#include "engine/layers/merge.hpp"
#include "engine/layers/pool2d.hpp"
#include "engine/layers/registry.hpp"
#include "engine/layers/zero_padding2d.hpp"

namespace dtrain::onnx_export {

namespace {

const std::vector<int64_t> kToNchw{0, 3, 1, 2}, kToNhwc{0, 2, 3, 1};

// The layer's concrete class; the table only calls an exporter for its type.
template <typename T>
const T& as(const LayerIO& io) {
  return dynamic_cast<const T&>(io.view.layer);
}

std::string out_hint(const LayerIO& io) { return io.view.name; }

}  // namespace

Result<std::string> export_dense(GraphBuilder& g, const LayerIO& io) {
  // x (B, ..., in) @ kernel (in, units) [+ bias]: MatMul broadcasts over the leading axes.
  std::string y = g.node("MatMul", {io.inputs[0], g.tensor(io.view.name + "/kernel", io.params[0])},
                         io.params.size() > 1 ? io.view.name + "/matmul" : out_hint(io));
  if (io.params.size() > 1) y = g.node("Add", {y, g.tensor(io.view.name + "/bias", io.params[1])}, out_hint(io));
  return y;
}

Result<std::string> export_conv2d(GraphBuilder& g, const LayerIO& io) {
  const Conv2D& conv = as<Conv2D>(io);
  const Conv2dOptions& o = conv.options();
  // kernel HWIO (kh, kw, ic, oc) -> OIHW (oc, ic, kh, kw).
  const Tensor& k = io.params[0];
  const int64_t kh = k.dim(0), kw = k.dim(1), ic = k.dim(2), oc = k.dim(3);
  std::vector<float> oihw(static_cast<size_t>(k.numel()));
  const float* src = k.data();
  for (int64_t h = 0; h < kh; ++h)
    for (int64_t w = 0; w < kw; ++w)
      for (int64_t i = 0; i < ic; ++i)
        for (int64_t c = 0; c < oc; ++c)
          oihw[static_cast<size_t>(((c * ic + i) * kh + h) * kw + w)] = src[((h * kw + w) * ic + i) * oc + c];
  std::vector<std::string> in{g.node("Transpose", {io.inputs[0]}, io.view.name + "/nchw", {Attr::Ints("perm", kToNchw)}),
                              g.floats(io.view.name + "/kernel", {oc, ic, kh, kw}, oihw)};
  if (o.use_bias) in.push_back(g.tensor(io.view.name + "/bias", io.params[1]));
  const auto p = conv.pads();  // top, left, bottom, right = ONNX's [h_begin, w_begin, h_end, w_end]
  std::string y = g.node("Conv", in, io.view.name + "/conv",
                         {Attr::Ints("kernel_shape", {kh, kw}), Attr::Ints("strides", {o.strides[0], o.strides[1]}),
                          Attr::Ints("dilations", {o.dilation[0], o.dilation[1]}),
                          Attr::Ints("pads", {p[0], p[1], p[2], p[3]})});
  const bool relu = conv.fused_relu();
  y = g.node("Transpose", {y}, relu ? io.view.name + "/nhwc" : out_hint(io), {Attr::Ints("perm", kToNhwc)});
  if (relu) y = g.node("Relu", {y}, out_hint(io));
  return y;
}

Result<std::string> export_pool2d(GraphBuilder& g, const LayerIO& io) {
  const Pool2D& pool = as<Pool2D>(io);
  const Pool2dOptions& o = pool.options();
  const auto p = pool.pads();
  std::vector<Attr> attrs{Attr::Ints("kernel_shape", {o.size[0], o.size[1]}),
                          Attr::Ints("strides", {o.strides[0], o.strides[1]}),
                          Attr::Ints("pads", {p[0], p[1], p[2], p[3]})};
  const bool max = o.kind == kernels::PoolKind::kMax;
  // Average pooling divides by the real (unpadded) elements of each window, as dtrain's.
  if (!max) attrs.push_back(Attr::Int("count_include_pad", 0));
  std::string y = g.node("Transpose", {io.inputs[0]}, io.view.name + "/nchw", {Attr::Ints("perm", kToNchw)});
  y = g.node(max ? "MaxPool" : "AveragePool", {y}, io.view.name + "/pool", attrs);
  return g.node("Transpose", {y}, out_hint(io), {Attr::Ints("perm", kToNhwc)});
}

Result<std::string> export_global_pool(GraphBuilder& g, const LayerIO& io) {
  const GlobalPoolKind kind = as<GlobalPool>(io).kind();
  const std::vector<int64_t> axes = kind == GlobalPoolKind::kAvg1d ? std::vector<int64_t>{1} : std::vector<int64_t>{1, 2};
  return g.node(kind == GlobalPoolKind::kMax2d ? "ReduceMax" : "ReduceMean", {io.inputs[0]}, out_hint(io),
                {Attr::Ints("axes", axes), Attr::Int("keepdims", 0)});
}

Result<std::string> export_batch_norm(GraphBuilder& g, const LayerIO& io) {
  // Inference form, computed as dtrain's forward does: y = x * scale + shift
  // with scale = gamma / sqrt(moving_variance + eps), shift = beta - moving_mean * scale.
  const float eps = as<BatchNorm>(io).epsilon();
  const int64_t c = io.params[0].numel();
  std::vector<float> scale(static_cast<size_t>(c)), shift(static_cast<size_t>(c));
  for (int64_t j = 0; j < c; ++j) {
    const float inv_std = 1.0f / std::sqrt(io.params[3][j] + eps);
    scale[static_cast<size_t>(j)] = io.params[0][j] * inv_std;
    shift[static_cast<size_t>(j)] = io.params[1][j] - io.params[2][j] * scale[static_cast<size_t>(j)];
  }
  const std::string y = g.node("Mul", {io.inputs[0], g.floats(io.view.name + "/scale", {c}, scale)},
                               io.view.name + "/scaled");
  return g.node("Add", {y, g.floats(io.view.name + "/shift", {c}, shift)}, out_hint(io));
}

Result<std::string> export_layer_norm(GraphBuilder& g, const LayerIO& io) {
  const LayerNorm& ln = as<LayerNorm>(io);
  const int64_t c = io.in_shapes[0].back();
  size_t next = 0;
  std::vector<std::string> in{io.inputs[0]};
  in.push_back(ln.scale() ? g.tensor(io.view.name + "/gamma", io.params[next++])
                          : g.floats(io.view.name + "/gamma", {c}, std::vector<float>(static_cast<size_t>(c), 1.0f)));
  if (ln.center()) in.push_back(g.tensor(io.view.name + "/beta", io.params[next]));
  return g.node("LayerNormalization", in, out_hint(io),
                {Attr::Int("axis", -1), Attr::Float("epsilon", ln.epsilon())});
}

Result<std::string> export_activation(GraphBuilder& g, const LayerIO& io) {
  return export_activation_fn(g, as<Activation>(io).function(), io.inputs[0], out_hint(io));
}

Result<std::string> export_dropout(GraphBuilder&, const LayerIO& io) { return io.inputs[0]; }  // identity in inference

Result<std::string> export_reshape(GraphBuilder& g, const LayerIO& io) {
  // 0 keeps the batch dimension of the input (flatten and reshape alike).
  std::vector<int64_t> shape{0};
  shape.insert(shape.end(), io.view.out_shape.begin(), io.view.out_shape.end());
  return g.node("Reshape", {io.inputs[0], g.int64s(io.view.name + "/shape", shape)}, out_hint(io));
}

Result<std::string> export_zero_padding2d(GraphBuilder& g, const LayerIO& io) {
  const ZeroPadding2D& z = as<ZeroPadding2D>(io);
  const std::vector<int64_t> pads{0, z.pad_h(), z.pad_w(), 0, 0, z.pad_h(), z.pad_w(), 0};  // NHWC begins, then ends
  return g.node("Pad", {io.inputs[0], g.int64s(io.view.name + "/pads", pads)}, out_hint(io));
}

Result<std::string> export_embedding(GraphBuilder& g, const LayerIO& io) {
  // ids (B, ...) int32 -> rows of the table (B, ..., output_dim).
  return g.node("Gather", {g.tensor(io.view.name + "/embeddings", io.params[0]), io.inputs[0]}, out_hint(io),
                {Attr::Int("axis", 0)});
}

Result<std::string> export_position_embedding(GraphBuilder& g, const LayerIO& io) {
  // y = x + embeddings[:T] for x (B, ..., T, C); T is fixed by the model.
  const Shape& in = io.in_shapes[0];
  const int64_t t = in[in.size() - 2], c = in.back();
  const float* e = io.params[0].data();
  return g.node("Add", {io.inputs[0], g.floats(io.view.name + "/embeddings", {t, c}, std::vector<float>(e, e + t * c))},
                out_hint(io));
}

Result<std::string> export_merge(GraphBuilder& g, const LayerIO& io) {
  switch (as<Merge>(io).kind()) {
    case MergeKind::kAdd: return g.node("Sum", io.inputs, out_hint(io));
    case MergeKind::kSubtract: return g.node("Sub", io.inputs, out_hint(io));
    case MergeKind::kAverage: return g.node("Mean", io.inputs, out_hint(io));
    case MergeKind::kMaximum: return g.node("Max", io.inputs, out_hint(io));
    case MergeKind::kMultiply: {
      std::string y = io.inputs[0];
      for (size_t i = 1; i < io.inputs.size(); ++i) {
        y = g.node("Mul", {y, io.inputs[i]}, i + 1 == io.inputs.size() ? out_hint(io) : io.view.name + "/mul");
      }
      return y;
    }
  }
  return config_error(io.view.place + ": unknown merge kind");
}

Result<std::string> export_concatenate(GraphBuilder& g, const LayerIO& io) {
  return g.node("Concat", io.inputs, out_hint(io), {Attr::Int("axis", as<Concatenate>(io).resolved_axis() + 1)});
}

Result<std::string> export_activation_fn(GraphBuilder& g, const std::string& fn, const std::string& x,
                                         const std::string& hint) {
  if (fn == "relu") return g.node("Relu", {x}, hint);
  if (fn == "tanh") return g.node("Tanh", {x}, hint);
  if (fn == "sigmoid") return g.node("Sigmoid", {x}, hint);
  if (fn == "softmax") return g.node("Softmax", {x}, hint, {Attr::Int("axis", -1)});
  if (fn == "gelu") {
    // The exact (erf) form: 0.5 * x * (1 + erf(x / sqrt(2))).
    const std::string s = g.node("Mul", {x, g.floats(hint + "/rsqrt2", {}, {static_cast<float>(M_SQRT1_2)})}, hint + "/scaled");
    const std::string e = g.node("Erf", {s}, hint + "/erf");
    const std::string one = g.node("Add", {e, g.floats(hint + "/one", {}, {1.0f})}, hint + "/one_plus");
    const std::string half = g.node("Mul", {x, g.floats(hint + "/half", {}, {0.5f})}, hint + "/half_x");
    return g.node("Mul", {half, one}, hint);
  }
  return config_error(fmt::format("activation \"{}\" has no ONNX export", fn));
}

LayerExporter find_layer_exporter(const std::string& type) {
  const LayerRow* row = find_layer_row(type);
  return row == nullptr ? nullptr : row->export_onnx;
}

}  // namespace dtrain::onnx_export
