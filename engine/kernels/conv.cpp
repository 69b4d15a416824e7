// oneDNN convolution forward / backward-data / backward-weights, cached by
// shape and operand types. Activations stay NHWC in place; weights are HWIO
// for the caller and reordered to the layout oneDNN prefers when that differs
// (for bf16 a blocked layout that interleaves pairs of input channels).
#include "engine/kernels/conv.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <string_view>

#include "engine/kernels/bf16_path.hpp"
#include "engine/kernels/onednn_context.hpp"

namespace dtrain::kernels {

std::vector<int64_t> Conv2dShape::key() const {
  return {n, ih, iw, ic, oh, ow, oc, kh, kw, sh, sw, dh, dw, pad_top, pad_left, pad_bottom, pad_right, relu ? 1 : 0};
}

namespace {

using dnnl::memory;
using tag = memory::format_tag;
constexpr auto kF32 = memory::data_type::f32;
constexpr auto kAlg = dnnl::algorithm::convolution_direct;

// The element types of one pass in oneDNN's terms: src is x (or dx), weights
// is w (or dw), dst is y (or dy). Biases are always f32.
struct PassTypes {
  KType src, weights, dst;
};

// Descriptors of one convolution geometry. Weights are declared with
// format_tag::any so oneDNN may pick its fastest (blocked) layout.
struct Geometry {
  memory::desc x, w_plain, w_any, b, y;
  memory::dims strides, dilates, pad_l, pad_r;
  bool relu = false;

  Geometry(const Conv2dShape& s, bool has_bias, PassTypes t)
      : x({s.n, s.ic, s.ih, s.iw}, onednn::data_type_of(t.src), tag::nhwc),
        w_plain({s.oc, s.ic, s.kh, s.kw}, onednn::data_type_of(t.weights), tag::hwio),
        w_any({s.oc, s.ic, s.kh, s.kw}, onednn::data_type_of(t.weights), tag::any),
        y({s.n, s.oc, s.oh, s.ow}, onednn::data_type_of(t.dst), tag::nhwc),
        strides{s.sh, s.sw},
        dilates{s.dh - 1, s.dw - 1},
        pad_l{s.pad_top, s.pad_left},
        pad_r{s.pad_bottom, s.pad_right},
        relu(s.relu) {
    if (has_bias) b = memory::desc({s.oc}, kF32, tag::a);
  }

  dnnl::convolution_forward::primitive_desc forward_pd() const {
    const dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_training, kAlg, x, w_any, b, y, strides,
                                            dilates, pad_l, pad_r);
    dnnl::primitive_attr attr = onednn::default_attr();
    if (relu) {
      dnnl::post_ops ops;
      ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
      attr.set_post_ops(ops);
    }
    return {d, attr, onednn::cpu_engine()};
  }
};

// A weights reorder between the plain HWIO layout and the primitive's layout.
struct Reorder {
  bool needed = false;
  memory::desc from, to, scratchpad;
  dnnl::reorder prim;

  Reorder() = default;
  Reorder(const memory::desc& src, const memory::desc& dst) : needed(src != dst), from(src), to(dst) {
    if (!needed) return;
    const dnnl::reorder::primitive_desc pd(onednn::cpu_engine(), src, onednn::cpu_engine(), dst,
                                           onednn::default_attr());
    scratchpad = pd.scratchpad_desc();
    prim = dnnl::reorder(pd);
  }

  // Runs the reorder from `src` into the calling thread's buffer `slot`
  // (or returns `src` itself when no reorder is needed).
  const void* to_thread_buffer(const void* src, int slot) const {
    if (!needed) return src;
    void* dst = onednn::thread_buffer(slot, to.get_size());
    run(src, dst);
    return dst;
  }
  void run(const void* src, void* dst) const {
    onednn::execute(prim, scratchpad, {{DNNL_ARG_FROM, onednn::wrap(from, src)}, {DNNL_ARG_TO, onednn::wrap(to, dst)}});
  }
};

struct Forward {
  Geometry g;
  memory::desc w, scratchpad;
  dnnl::convolution_forward prim;
  Reorder weights;  // plain -> w
};

struct BackwardData {
  Geometry g;
  memory::desc w, scratchpad;
  dnnl::convolution_backward_data prim;
  Reorder weights;  // plain -> w
};

struct BackwardWeights {
  Geometry g;
  memory::desc dw, scratchpad;
  dnnl::convolution_backward_weights prim;
  Reorder weights;  // dw -> plain
};

template <class V>
onednn::PrimitiveCache<V>& cache() {
  static onednn::PrimitiveCache<V> c;
  return c;
}

std::vector<int64_t> key_of(const Conv2dShape& s, bool has_bias, PassTypes t) {
  std::vector<int64_t> k = s.key();
  k.insert(k.end(), {has_bias, static_cast<int64_t>(t.src), static_cast<int64_t>(t.weights),
                     static_cast<int64_t>(t.dst)});
  return k;
}

// The forward pass a backward primitive is created against (oneDNN's hint),
// with every operand in the backward's compute type: a bf16 backward-data
// with an f32 dx has no forward with an f32 x and bf16 weights to match.
dnnl::convolution_forward::primitive_desc hint_pd(const Conv2dShape& s, bool has_bias, KType compute) {
  return Geometry(s, has_bias, {compute, compute, compute}).forward_pd();
}

// Throws unless the inputs a, b are both f32 with an f32 result, or both
// bf16 with a result in `bf16_outs` ("f32" or "f32 or bf16").
void check_types(const char* pass, const char* a_name, KType a, const char* b_name, KType b, const char* out_name,
                 KType out, const char* bf16_outs) {
  const bool bf16_out_ok = out == KType::kF32 || std::string_view(bf16_outs) != "f32";
  if ((a == KType::kF32 && b == KType::kF32 && out == KType::kF32) ||
      (a == KType::kBf16 && b == KType::kBf16 && bf16_out_ok)) {
    return;
  }
  onednn::fail_types(fmt::format(
      "kernels::conv2d_{} does not implement {} {}, {} {} -> {} {}; it implements {}, {} f32 -> {} f32 and "
      "{}, {} bf16 -> {} {}",
      pass, a_name, ktype_name(a), b_name, ktype_name(b), out_name, ktype_name(out), a_name, b_name, out_name,
      a_name, b_name, out_name, bf16_outs));
}

// oneDNN 2.6's AVX2 1x1 backward-weights kernel (`jit_1x1:avx2`) is broken
// for strided convolutions: it writes past the end of a buffer (valgrind:
// "Invalid write of size 8"; glibc then aborts with "double free or
// corruption") and with 2 threads gives different bits from run to run. Such
// a convolution takes oneDNN's next implementation (`jit:avx2`, direct).
void skip_broken_backward_weights(const Conv2dShape& s, dnnl::convolution_backward_weights::primitive_desc& pd) {
  if (s.sh == 1 && s.sw == 1) return;
  while (std::string_view(pd.impl_info_str()).starts_with("jit_1x1:avx2")) {
    if (!pd.next_impl()) {
      onednn::fail_types(fmt::format(
          "oneDNN has no convolution backward-weights for shape key [{}] but jit_1x1:avx2, which is broken for "
          "strides above 1 in oneDNN 2.6",
          fmt::join(s.key(), ", ")));
    }
  }
}

}  // namespace

void conv2d_forward(const Conv2dShape& s, const void* x, const void* w, const float* bias, void* y) {
  check_types("forward", "x", s.x_type, "w", s.w_type, "y", s.y_type, "f32 or bf16");
  if (s.x_type == KType::kBf16 && bf16_emulated()) {
    Conv2dShape f = s;
    f.x_type = f.w_type = f.y_type = KType::kF32;
    const float* x32 = widen_bf16(x, s.n * s.ih * s.iw * s.ic, 0);
    const float* w32 = widen_bf16(w, s.kh * s.kw * s.ic * s.oc, 1);
    emulated_result(s.y_type, y, s.n * s.oh * s.ow * s.oc, 2,
                    [&](float* y32) { conv2d_forward(f, x32, w32, bias, y32); });
    return;
  }
  const bool has_bias = bias != nullptr;
  const PassTypes types{s.x_type, s.w_type, s.y_type};
  const auto key = key_of(s, has_bias, types);
  const auto p = cache<Forward>().get(key, [&] {
    try {
      Forward f{Geometry(s, has_bias, types), {}, {}, {}, {}};
      const auto pd = f.g.forward_pd();
      f.w = pd.weights_desc();
      f.scratchpad = pd.scratchpad_desc();
      f.prim = dnnl::convolution_forward(pd);
      f.weights = Reorder(f.g.w_plain, f.w);
      return f;
    } catch (const dnnl::error& e) {
      onednn::fail("a convolution forward", key, e);
    }
  });
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, onednn::wrap(p->g.x, x)},
                                       {DNNL_ARG_WEIGHTS, onednn::wrap(p->w, p->weights.to_thread_buffer(w, 0))},
                                       {DNNL_ARG_DST, onednn::wrap(p->g.y, y)}};
  if (has_bias) args.emplace(DNNL_ARG_BIAS, onednn::wrap(p->g.b, bias));
  onednn::execute(p->prim, p->scratchpad, std::move(args));
}

void conv2d_backward_data(const Conv2dShape& s, const void* dy, const void* w, void* dx) {
  check_types("backward_data", "dy", s.dy_type, "w", s.w_type, "dx", s.dx_type, "f32 or bf16");
  if (s.dy_type == KType::kBf16 && bf16_emulated()) {
    Conv2dShape f = s;
    f.dy_type = f.w_type = f.dx_type = KType::kF32;
    const float* dy32 = widen_bf16(dy, s.n * s.oh * s.ow * s.oc, 0);
    const float* w32 = widen_bf16(w, s.kh * s.kw * s.ic * s.oc, 1);
    emulated_result(s.dx_type, dx, s.n * s.ih * s.iw * s.ic, 2,
                    [&](float* dx32) { conv2d_backward_data(f, dy32, w32, dx32); });
    return;
  }
  const PassTypes types{s.dx_type, s.w_type, s.dy_type};
  const auto key = key_of(s, false, types);
  const auto p = cache<BackwardData>().get(key, [&] {
    try {
      BackwardData b{Geometry(s, false, types), {}, {}, {}, {}};
      const dnnl::convolution_backward_data::desc d(kAlg, b.g.x, b.g.w_any, b.g.y, b.g.strides, b.g.dilates,
                                                    b.g.pad_l, b.g.pad_r);
      const dnnl::convolution_backward_data::primitive_desc pd(d, onednn::default_attr(), onednn::cpu_engine(),
                                                               hint_pd(s, false, s.w_type));
      b.w = pd.weights_desc();
      b.scratchpad = pd.scratchpad_desc();
      b.prim = dnnl::convolution_backward_data(pd);
      b.weights = Reorder(b.g.w_plain, b.w);
      return b;
    } catch (const dnnl::error& e) {
      onednn::fail("a convolution backward-data", key, e);
    }
  });
  onednn::execute(p->prim, p->scratchpad,
                  {{DNNL_ARG_DIFF_DST, onednn::wrap(p->g.y, dy)},
                   {DNNL_ARG_WEIGHTS, onednn::wrap(p->w, p->weights.to_thread_buffer(w, 0))},
                   {DNNL_ARG_DIFF_SRC, onednn::wrap(p->g.x, dx)}});
}

void conv2d_backward_weights(const Conv2dShape& s, const void* x, const void* dy, float* dw, float* db) {
  check_types("backward_weights", "x", s.x_type, "dy", s.dy_type, "dw", KType::kF32, "f32");
  if (s.x_type == KType::kBf16 && bf16_emulated()) {
    Conv2dShape f = s;
    f.x_type = f.dy_type = KType::kF32;
    conv2d_backward_weights(f, widen_bf16(x, s.n * s.ih * s.iw * s.ic, 0),
                            widen_bf16(dy, s.n * s.oh * s.ow * s.oc, 1), dw, db);
    return;
  }
  const bool has_bias = db != nullptr;
  const PassTypes types{s.x_type, KType::kF32, s.dy_type};
  const auto key = key_of(s, has_bias, types);
  const auto p = cache<BackwardWeights>().get(key, [&] {
    try {
      BackwardWeights b{Geometry(s, has_bias, types), {}, {}, {}, {}};
      const dnnl::convolution_backward_weights::desc d(kAlg, b.g.x, b.g.w_any, b.g.b, b.g.y, b.g.strides,
                                                       b.g.dilates, b.g.pad_l, b.g.pad_r);
      dnnl::convolution_backward_weights::primitive_desc pd(d, onednn::default_attr(), onednn::cpu_engine(),
                                                            hint_pd(s, has_bias, s.x_type));
      skip_broken_backward_weights(s, pd);
      b.dw = pd.diff_weights_desc();
      b.scratchpad = pd.scratchpad_desc();
      b.prim = dnnl::convolution_backward_weights(pd);
      b.weights = Reorder(b.dw, b.g.w_plain);
      return b;
    } catch (const dnnl::error& e) {
      onednn::fail("a convolution backward-weights", key, e);
    }
  });
  void* dw_raw = p->weights.needed ? onednn::thread_buffer(0, p->dw.get_size()) : dw;
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, onednn::wrap(p->g.x, x)},
                                       {DNNL_ARG_DIFF_DST, onednn::wrap(p->g.y, dy)},
                                       {DNNL_ARG_DIFF_WEIGHTS, onednn::wrap(p->dw, dw_raw)}};
  if (has_bias) args.emplace(DNNL_ARG_DIFF_BIAS, onednn::wrap(p->g.b, db));
  onednn::execute(p->prim, p->scratchpad, std::move(args));
  if (p->weights.needed) p->weights.run(dw_raw, dw);
}

}  // namespace dtrain::kernels
