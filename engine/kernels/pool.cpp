// oneDNN pooling forward (training, with workspace) and backward, cached by
// shape; float32 max pooling runs dtrain's own loops (max_pool.hpp).
#include "engine/kernels/pool.hpp"

#include "engine/kernels/bf16_path.hpp"
#include "engine/kernels/max_pool.hpp"
#include "engine/kernels/onednn_context.hpp"

namespace dtrain::kernels {

std::vector<int64_t> Pool2dShape::key() const {
  return {static_cast<int64_t>(kind), n, ih, iw, c, oh, ow, kh, kw, sh, sw, pad_top, pad_left, pad_bottom, pad_right,
          static_cast<int64_t>(type)};
}

namespace {

using dnnl::memory;
using tag = memory::format_tag;

struct Forward {
  memory::desc x, y, workspace, scratchpad;
  dnnl::pooling_forward prim;
};

struct Backward {
  memory::desc x, y, workspace, scratchpad;
  dnnl::pooling_backward prim;
};

dnnl::algorithm algorithm_of(PoolKind k) {
  return k == PoolKind::kMax ? dnnl::algorithm::pooling_max : dnnl::algorithm::pooling_avg_exclude_padding;
}

struct Geometry {
  memory::desc x, y;
  memory::dims strides, kernel, pad_l, pad_r;
  dnnl::algorithm alg;

  explicit Geometry(const Pool2dShape& s)
      : x({s.n, s.c, s.ih, s.iw}, onednn::data_type_of(s.type), tag::nhwc),
        y({s.n, s.c, s.oh, s.ow}, onednn::data_type_of(s.type), tag::nhwc),
        strides{s.sh, s.sw},
        kernel{s.kh, s.kw},
        pad_l{s.pad_top, s.pad_left},
        pad_r{s.pad_bottom, s.pad_right},
        alg(algorithm_of(s.kind)) {}

  dnnl::pooling_forward::primitive_desc forward_pd() const {
    const dnnl::pooling_forward::desc d(dnnl::prop_kind::forward_training, alg, x, y, strides, kernel, pad_l, pad_r);
    return {d, onednn::default_attr(), onednn::cpu_engine()};
  }
};

const Forward& forward_primitive(const Pool2dShape& s, std::shared_ptr<const Forward>& hold) {
  static onednn::PrimitiveCache<Forward> cache;
  const auto key = s.key();
  hold = cache.get(key, [&] {
    try {
      const Geometry g(s);
      const auto pd = g.forward_pd();
      return Forward{g.x, g.y, pd.workspace_desc(), pd.scratchpad_desc(), dnnl::pooling_forward(pd)};
    } catch (const dnnl::error& e) {
      onednn::fail("a pooling forward", key, e);
    }
  });
  return *hold;
}

}  // namespace

namespace {

// The emulated bf16 pooling (bf16_path.hpp) runs the f32 primitives: its
// workspace is theirs.
bool emulated(const Pool2dShape& s) { return s.type == KType::kBf16 && bf16_emulated(); }

Pool2dShape as_f32(Pool2dShape s) {
  s.type = KType::kF32;
  return s;
}

bool own_max_pool(const Pool2dShape& s) { return s.kind == PoolKind::kMax && s.type == KType::kF32; }

}  // namespace

size_t pool2d_workspace_bytes(const Pool2dShape& s) {
  if (own_max_pool(emulated(s) ? as_f32(s) : s)) return max_pool_f32_workspace_bytes(s);
  std::shared_ptr<const Forward> hold;
  return forward_primitive(emulated(s) ? as_f32(s) : s, hold).workspace.get_size();
}

void pool2d_forward(const Pool2dShape& s, const void* x, void* y, void* workspace) {
  if (emulated(s)) {
    const float* x32 = widen_bf16(x, s.n * s.ih * s.iw * s.c, 0);
    emulated_result(KType::kBf16, y, s.n * s.oh * s.ow * s.c, 1,
                    [&](float* y32) { pool2d_forward(as_f32(s), x32, y32, workspace); });
    return;
  }
  if (own_max_pool(s)) {
    max_pool_f32_forward(s, static_cast<const float*>(x), static_cast<float*>(y), static_cast<int32_t*>(workspace));
    return;
  }
  std::shared_ptr<const Forward> hold;
  const Forward& p = forward_primitive(s, hold);
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, onednn::wrap(p.x, x)}, {DNNL_ARG_DST, onednn::wrap(p.y, y)}};
  if (p.workspace.get_size() > 0) args.emplace(DNNL_ARG_WORKSPACE, onednn::wrap(p.workspace, workspace));
  onednn::execute(p.prim, p.scratchpad, std::move(args));
}

void pool2d_backward(const Pool2dShape& s, const void* dy, void* dx, const void* workspace) {
  if (emulated(s)) {
    const float* dy32 = widen_bf16(dy, s.n * s.oh * s.ow * s.c, 0);
    emulated_result(KType::kBf16, dx, s.n * s.ih * s.iw * s.c, 1,
                    [&](float* dx32) { pool2d_backward(as_f32(s), dy32, dx32, workspace); });
    return;
  }
  if (own_max_pool(s)) {
    max_pool_f32_backward(s, static_cast<const float*>(dy), static_cast<float*>(dx),
                          static_cast<const int32_t*>(workspace));
    return;
  }
  static onednn::PrimitiveCache<Backward> cache;
  const auto key = s.key();
  const auto p = cache.get(key, [&] {
    try {
      const Geometry g(s);
      const auto fwd = g.forward_pd();
      const dnnl::pooling_backward::desc d(g.alg, g.x, g.y, g.strides, g.kernel, g.pad_l, g.pad_r);
      const dnnl::pooling_backward::primitive_desc pd(d, onednn::default_attr(), onednn::cpu_engine(), fwd);
      return Backward{g.x, g.y, pd.workspace_desc(), pd.scratchpad_desc(), dnnl::pooling_backward(pd)};
    } catch (const dnnl::error& e) {
      onednn::fail("a pooling backward", key, e);
    }
  });
  std::unordered_map<int, memory> args{{DNNL_ARG_DIFF_DST, onednn::wrap(p->y, dy)},
                                       {DNNL_ARG_DIFF_SRC, onednn::wrap(p->x, dx)}};
  if (p->workspace.get_size() > 0) args.emplace(DNNL_ARG_WORKSPACE, onednn::wrap(p->workspace, workspace));
  onednn::execute(p->prim, p->scratchpad, std::move(args));
}

}  // namespace dtrain::kernels
