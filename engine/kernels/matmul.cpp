// oneDNN matmul primitive, cached by (batch, M, N, K, transposes, bias, types,
// A's leading dimension). A product is computed in blocks of rows (a batch in
// groups of products) whose size depends on the shape alone, each block by
// one thread with oneDNN running single-threaded inside it: no block's sum is
// split over threads (oneDNN's AVX2 gemm splits K by the thread count), so
// the bits do not depend on the number of threads.
#include "engine/kernels/matmul.hpp"

#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <cassert>
#include <exception>
#include <vector>

#include "engine/kernels/bf16_path.hpp"
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
// lda: A's leading dimension when A is stored transposed (the M of the whole
// product a block of rows is taken from).
MatmulPrimitive make(const MatmulShape& s, bool has_bias, int64_t lda, const std::vector<int64_t>& key) {
  MatmulPrimitive p;
  if (s.batch == 1) {
    p.a = memory::desc({s.m, s.k}, onednn::data_type_of(s.a_type),
                       s.trans_a ? memory::dims{1, lda} : memory::dims{s.k, 1});
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

// A block: at least kBlockRows rows of one product, or whole products, and
// at least kBlockWork multiply-adds where the shape has them (a oneDNN call
// costs microseconds). Sized by N and K (or by the product) alone, so a row
// of a replica's shard lands in a block of the size it has in the whole batch.
constexpr int64_t kBlockRows = 64;
constexpr int64_t kBlockWork = int64_t{1} << 20;
// Below this many multiply-adds in all, the blocks run on the calling thread.
constexpr int64_t kParallelWork = int64_t{1} << 21;
// MatmulShape::row_invariant: blocks are a multiple of this many rows.
constexpr int64_t kInvariantRows = 48;

// Runs run(i) for i in [0, blocks), each with oneDNN limited to the calling
// thread, blocks spread over the OpenMP team when there is enough work
// (`work` multiply-adds a block). The first exception is rethrown here.
// oneDNN on the calling thread alone while this lives (its OpenMP teams take
// the thread's nthreads setting, restored at the end).
class OneDnnOnThisThread {
 public:
  OneDnnOnThisThread() : saved_(omp_get_max_threads()) { omp_set_num_threads(1); }
  ~OneDnnOnThisThread() { omp_set_num_threads(saved_); }
  OneDnnOnThisThread(const OneDnnOnThisThread&) = delete;
  OneDnnOnThisThread& operator=(const OneDnnOnThisThread&) = delete;

 private:
  const int saved_;
};

template <class Run>
void run_blocks(int64_t blocks, int64_t work, const Run& run) {
  const int threads = omp_get_max_threads();
  if (blocks == 1 || threads == 1 || omp_in_parallel() || blocks * work < kParallelWork) {
    const OneDnnOnThisThread one;
    for (int64_t i = 0; i < blocks; ++i) run(i);
    return;
  }
  std::exception_ptr error;
#pragma omp parallel num_threads(static_cast<int>(std::min<int64_t>(threads, blocks)))
  {
    const OneDnnOnThisThread one;
#pragma omp for schedule(static)
    for (int64_t i = 0; i < blocks; ++i) {
      try {
        run(i);
      } catch (...) {
#pragma omp critical(dtrain_matmul_error)
        if (!error) error = std::current_exception();
      }
    }
  }
  if (error) std::rethrow_exception(error);
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
  if (s.a_type == KType::kBf16 && bf16_emulated()) {
    // The same bf16 operands, widened; the f32 product; one rounding of c.
    MatmulShape f = s;
    f.a_type = f.b_type = f.c_type = KType::kF32;
    const float* a32 = widen_bf16(a, s.batch * s.m * s.k, 0);
    const float* b32 = widen_bf16(b, s.batch * s.k * s.n, 1);
    emulated_result(s.c_type, c, s.batch * s.m * s.n, 2, [&](float* c32) { matmul(f, a32, b32, bias, c32); });
    return;
  }
  const bool has_bias = bias != nullptr;
  // Blocks: rows of one product, or whole products of a batch; the last
  // block may be smaller.
  const bool by_rows = s.batch == 1;
  const int64_t items = by_rows ? s.m : s.batch;
  // Row-invariant: every call has per_block rows, the last block padded.
  const bool padded = s.row_invariant && by_rows && !s.trans_a;
  int64_t per_block = by_rows ? std::max(kBlockRows, (kBlockWork + s.n * s.k - 1) / (s.n * s.k))
                              : std::max<int64_t>(1, (kBlockWork + s.m * s.n * s.k - 1) / (s.m * s.n * s.k));
  if (padded) per_block = (per_block + kInvariantRows - 1) / kInvariantRows * kInvariantRows;
  const int64_t blocks = (items + per_block - 1) / per_block;
  const int64_t call_rows = padded ? per_block : std::min(per_block, items);
  const auto primitive = [&](int64_t count) {
    MatmulShape b_shape = s;
    (by_rows ? b_shape.m : b_shape.batch) = count;
    const int64_t lda = s.trans_a ? s.m : 0;
    const std::vector<int64_t> key{b_shape.batch, b_shape.m, s.n, s.k, s.trans_a, s.trans_b, has_bias,
                                   static_cast<int64_t>(s.a_type), static_cast<int64_t>(s.b_type),
                                   static_cast<int64_t>(s.c_type), lda};
    return cache().get(key, [&] { return make(b_shape, has_bias, lda, key); });
  };
  // Created before the blocks run: creation may throw.
  const auto full = primitive(call_rows);
  const int64_t last_count = items - (blocks - 1) * per_block;
  const auto last = padded || last_count == call_rows ? full : primitive(last_count);
  const auto a_bytes = static_cast<int64_t>(ktype_bytes(s.a_type)), b_bytes = static_cast<int64_t>(ktype_bytes(s.b_type)),
             c_bytes = static_cast<int64_t>(ktype_bytes(s.c_type));
  const auto run = [&](int64_t i) {
    const MatmulPrimitive& p = i + 1 == blocks ? *last : *full;
    const int64_t first = i * per_block;
    const auto* a_at = static_cast<const char*>(a);
    const auto* b_at = static_cast<const char*>(b);
    auto* c_at = static_cast<char*>(c);
    if (by_rows) {
      a_at += (s.trans_a ? first : first * s.k) * a_bytes;
      c_at += first * s.n * c_bytes;
    } else {
      a_at += first * s.m * s.k * a_bytes;
      b_at += first * s.k * s.n * b_bytes;
      c_at += first * s.m * s.n * c_bytes;
    }
    // A short block of a padded product: its rows and zeros, into scratch.
    const int64_t count = std::min(per_block, items - first);
    std::vector<char> a_pad, c_pad;
    char* c_out = c_at;
    if (padded && count < per_block) {
      a_pad.assign(static_cast<size_t>(per_block * s.k * a_bytes), 0);
      std::copy_n(a_at, count * s.k * a_bytes, a_pad.data());
      c_pad.resize(static_cast<size_t>(per_block * s.n * c_bytes));
      a_at = a_pad.data();
      c_at = c_pad.data();
    }
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, onednn::wrap(p.a, a_at)},
                                         {DNNL_ARG_WEIGHTS, onednn::wrap(p.b, b_at)},
                                         {DNNL_ARG_DST, onednn::wrap(p.c, c_at)}};
    if (has_bias) args.emplace(DNNL_ARG_BIAS, onednn::wrap(p.bias, bias));
    onednn::execute(p.prim, p.scratchpad, std::move(args));
    if (c_at != c_out) std::copy_n(c_at, count * s.n * c_bytes, c_out);
  };
  const int64_t work = call_rows * (by_rows ? 1 : s.m) * s.n * s.k;
  run_blocks(blocks, work, run);
}

}  // namespace dtrain::kernels
