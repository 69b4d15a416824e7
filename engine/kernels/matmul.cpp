// oneDNN matmul primitive, cached by (batch, M, N, K, transposes, bias, types).
#include "engine/kernels/matmul.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>

#include "engine/kernels/cast.hpp"
#include "engine/kernels/onednn_context.hpp"

namespace dtrain::kernels {

namespace {

using dnnl::memory;

struct MatmulPrimitive {
  memory::desc a, b, bias, c, scratchpad;
  dnnl::matmul prim;
};

onednn::PrimitiveCache<MatmulPrimitive>& cache() {
  static onednn::PrimitiveCache<MatmulPrimitive> c;
  return c;
}

void check_types(const MatmulShape& s) {
  const bool all_f32 = s.a_type == KType::kF32 && s.b_type == KType::kF32 && s.c_type == KType::kF32;
  const bool bf16_in = s.a_type == KType::kBf16 && s.b_type == KType::kBf16;
  if (all_f32 || bf16_in) return;
  onednn::fail_types(fmt::format(
      "kernels::matmul does not implement a {} x b {} -> c {}; it implements f32 x f32 -> f32 and "
      "bf16 x bf16 -> f32 or bf16",
      ktype_name(s.a_type), ktype_name(s.b_type), ktype_name(s.c_type)));
}

// One product is 2-D descriptors; a batch is 3-D ones with the batch outermost.
MatmulPrimitive make(const MatmulShape& s, bool has_bias, const std::vector<int64_t>& key) {
  MatmulPrimitive p;
  if (s.batch == 1) {
    p.a = memory::desc({s.m, s.k}, onednn::data_type_of(s.a_type),
                       s.trans_a ? memory::dims{1, s.m} : memory::dims{s.k, 1});
    p.b = memory::desc({s.k, s.n}, onednn::data_type_of(s.b_type),
                       s.trans_b ? memory::dims{1, s.k} : memory::dims{s.n, 1});
    p.c = memory::desc({s.m, s.n}, onednn::data_type_of(s.c_type), memory::format_tag::ab);
    if (has_bias) p.bias = memory::desc({1, s.n}, memory::data_type::f32, memory::format_tag::ab);
  } else {
    p.a = memory::desc({s.batch, s.m, s.k}, onednn::data_type_of(s.a_type),
                       s.trans_a ? memory::dims{s.m * s.k, 1, s.m} : memory::dims{s.m * s.k, s.k, 1});
    p.b = memory::desc({s.batch, s.k, s.n}, onednn::data_type_of(s.b_type),
                       s.trans_b ? memory::dims{s.k * s.n, 1, s.k} : memory::dims{s.k * s.n, s.n, 1});
    p.c = memory::desc({s.batch, s.m, s.n}, onednn::data_type_of(s.c_type), memory::format_tag::abc);
    if (has_bias) p.bias = memory::desc({1, 1, s.n}, memory::data_type::f32, memory::format_tag::abc);
  }
  try {
    const dnnl::matmul::desc desc(p.a, p.b, p.bias, p.c);
    const dnnl::matmul::primitive_desc pd(desc, onednn::default_attr(), onednn::cpu_engine());
    p.scratchpad = pd.scratchpad_desc();
    p.prim = dnnl::matmul(pd);
  } catch (const dnnl::error& e) {
    onednn::fail("a matmul", key, e);
  }
  return p;
}

// c = bias broadcast over rows (or zeros): the products with K = 0.
void fill_bias(const MatmulShape& s, const float* bias, void* c) {
  for (int64_t i = 0; i < s.batch * s.m; ++i) {
    for (int64_t j = 0; j < s.n; ++j) {
      const float v = bias != nullptr ? bias[j] : 0.0f;
      if (s.c_type == KType::kBf16) {
        static_cast<uint16_t*>(c)[i * s.n + j] = float_to_bf16(v);
      } else {
        static_cast<float*>(c)[i * s.n + j] = v;
      }
    }
  }
}

}  // namespace

void matmul(const MatmulShape& s, const void* a, const void* b, const float* bias, void* c) {
  check_types(s);
  assert(s.batch >= 0);
  if (s.batch == 0 || s.m == 0 || s.n == 0) return;
  if (s.k == 0) {
    fill_bias(s, bias, c);
    return;
  }
  const bool has_bias = bias != nullptr;
  const std::vector<int64_t> key{s.batch,  s.m,      s.n, s.k, s.trans_a, s.trans_b,
                                 has_bias, static_cast<int64_t>(s.a_type), static_cast<int64_t>(s.b_type),
                                 static_cast<int64_t>(s.c_type)};
  const auto p = cache().get(key, [&] { return make(s, has_bias, key); });
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, onednn::wrap(p->a, a)},
                                       {DNNL_ARG_WEIGHTS, onednn::wrap(p->b, b)},
                                       {DNNL_ARG_DST, onednn::wrap(p->c, c)}};
  if (has_bias) args.emplace(DNNL_ARG_BIAS, onednn::wrap(p->bias, bias));
  onednn::execute(p->prim, p->scratchpad, std::move(args));
}

}  // namespace dtrain::kernels
