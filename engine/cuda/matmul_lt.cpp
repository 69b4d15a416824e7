// cuBLASLt matmul and the dense layer's GPU math (matmul_lt.hpp).
#include "engine/cuda/matmul_lt.hpp"

#include <cublasLt.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "engine/cuda/check.hpp"
#include "engine/cuda/runtime.hpp"

namespace dtrain::cuda {
namespace {

// cuBLASLt's workspace per GPU: 32 MiB, NVIDIA's recommendation for Hopper.
constexpr size_t kWorkspaceBytes = size_t{32} << 20;

// Owning wrappers of the cuBLASLt descriptors.
struct OpDesc {
  cublasLtMatmulDesc_t d = nullptr;
  OpDesc() = default;
  OpDesc(const OpDesc&) = delete;
  OpDesc& operator=(const OpDesc&) = delete;
  ~OpDesc() { if (d) cublasLtMatmulDescDestroy(d); }
};
struct LayoutDesc {
  cublasLtMatrixLayout_t d = nullptr;
  LayoutDesc() = default;
  LayoutDesc(const LayoutDesc&) = delete;
  LayoutDesc& operator=(const LayoutDesc&) = delete;
  ~LayoutDesc() { if (d) cublasLtMatrixLayoutDestroy(d); }
};
struct PrefDesc {
  cublasLtMatmulPreference_t d = nullptr;
  ~PrefDesc() { if (d) cublasLtMatmulPreferenceDestroy(d); }
};

// One prepared problem: its descriptors and the algorithm cuBLASLt's
// heuristic chose, made on first use and kept, so that a warm call sets the
// bias pointer and runs (no descriptor or heuristic work per step).
struct LtPlan {
  OpDesc op;
  LayoutDesc la, lb, lc;
  cublasLtMatmulAlgo_t algo{};
};

// What tells two plans apart: the column-major problem, the epilogue, the
// compute type, whether a bias is given, and the operands' alignments (the
// heuristic is told them).
using LtPlanKey = std::vector<int64_t>;

// One GPU's cuBLASLt state. The handle and workspace serve every call on that
// GPU's compute stream; mu serialises calls (the workspace and plans are shared).
struct LtContext {
  std::mutex mu;
  cublasLtHandle_t handle = nullptr;
  CachedBuffer workspace;  // kWorkspaceBytes, on dev.compute
  CachedBuffer ones;       // ones_n floats of 1.0, for column sums
  int64_t ones_n = 0;
  std::map<LtPlanKey, std::unique_ptr<LtPlan>> plans;
  std::set<LtPlanKey> no_bgrada;  // dense backward problems whose BGRADA attempt failed
};

Result<LtContext*> lt_context(GpuDevice& dev) {
  static std::mutex mu;
  static auto* contexts = new std::map<int, std::unique_ptr<LtContext>>();  // never destroyed, like gpu_device()
  std::lock_guard<std::mutex> lock(mu);
  auto it = contexts->find(dev.index);
  if (it != contexts->end()) return it->second.get();
  Result<DeviceGuard> guard = DeviceGuard::set(dev.index);
  if (!guard.ok()) return guard.error();
  auto ctx = std::make_unique<LtContext>();
  DTRAIN_CUDA_RETURN_IF_ERROR(cublasLtCreate(&ctx->handle));
  Result<CachedBuffer> ws = dev.allocator.allocate_buffer(kWorkspaceBytes, stream_id(dev.compute));
  if (!ws.ok()) return ws.error();
  ctx->workspace = std::move(*ws);
  LtContext* raw = ctx.get();
  contexts->emplace(dev.index, std::move(ctx));
  return raw;
}

// The largest power of two (at most 256) dividing the address.
uint32_t alignment(const void* p) {
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  uint32_t align = 256;
  while (align > 4 && a % align != 0) align /= 2;
  return align;
}

std::string shape_text(const LtGemmPlan& p) {
  return "column-major m=" + std::to_string(p.m) + " n=" + std::to_string(p.n) + " k=" + std::to_string(p.k) +
         (p.trans_a ? " A^T" : "") + (p.trans_b ? " B^T" : "") +
         (p.batch != 1 ? " batch=" + std::to_string(p.batch) : "");
}

// Makes `layout` a strided batch of `batch` matrices, `stride` elements apart.
Status set_batch(cublasLtMatrixLayout_t layout, int64_t batch, int64_t stride) {
  const int32_t count = static_cast<int32_t>(batch);
  DTRAIN_CUDA_RETURN_IF_ERROR(
      cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)));
  DTRAIN_CUDA_RETURN_IF_ERROR(
      cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof(stride)));
  return {};
}

LtPlanKey plan_key(const LtGemmPlan& p, cublasLtEpilogue_t epilogue, bool bias, MathMode mode, const void* a_prime,
                   const void* b_prime, const void* c) {
  return {p.m,        p.n,        p.k,         p.trans_a,          p.trans_b,          p.a_rows,
          p.a_cols,   p.lda,      p.b_rows,    p.b_cols,           p.ldb,              p.c_rows,
          p.c_cols,   p.ldc,      p.batch,     p.stride_a,         p.stride_b,         p.stride_c,
          epilogue,   bias,       int64_t(mode), alignment(a_prime), alignment(b_prime), alignment(c)};
}

// The descriptors of `p` and the heuristic's algorithm for them. Errors when
// cuBLASLt has none. REQUIRES: ctx.mu held.
Result<std::unique_ptr<LtPlan>> make_plan(GpuDevice& dev, LtContext& ctx, const LtGemmPlan& p,
                                          cublasLtEpilogue_t epilogue, MathMode mode, const void* a_prime,
                                          const void* b_prime, const void* c) {
  const cublasComputeType_t compute =
      mode == MathMode::kTf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  auto plan = std::make_unique<LtPlan>();
  DTRAIN_CUDA_RETURN_IF_ERROR(cublasLtMatmulDescCreate(&plan->op.d, compute, CUDA_R_32F));
  const cublasLtMatmulDesc_t op = plan->op.d;
  const cublasOperation_t ta = p.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t tb = p.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  DTRAIN_CUDA_RETURN_IF_ERROR(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)));
  DTRAIN_CUDA_RETURN_IF_ERROR(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)));
  DTRAIN_CUDA_RETURN_IF_ERROR(
      cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue)));
  DTRAIN_CUDA_RETURN_IF_ERROR(cublasLtMatrixLayoutCreate(&plan->la.d, CUDA_R_32F, static_cast<uint64_t>(p.a_rows),
                                                         static_cast<uint64_t>(p.a_cols), p.lda));
  DTRAIN_CUDA_RETURN_IF_ERROR(cublasLtMatrixLayoutCreate(&plan->lb.d, CUDA_R_32F, static_cast<uint64_t>(p.b_rows),
                                                         static_cast<uint64_t>(p.b_cols), p.ldb));
  DTRAIN_CUDA_RETURN_IF_ERROR(cublasLtMatrixLayoutCreate(&plan->lc.d, CUDA_R_32F, static_cast<uint64_t>(p.c_rows),
                                                         static_cast<uint64_t>(p.c_cols), p.ldc));
  if (p.batch != 1) {
    const std::pair<cublasLtMatrixLayout_t, int64_t> layouts[] = {
        {plan->la.d, p.stride_a}, {plan->lb.d, p.stride_b}, {plan->lc.d, p.stride_c}};
    for (const auto& [layout, stride] : layouts) {
      if (Status st = set_batch(layout, p.batch, stride); !st.ok()) return st.error();
    }
  }
  PrefDesc pref;
  DTRAIN_CUDA_RETURN_IF_ERROR(cublasLtMatmulPreferenceCreate(&pref.d));
  const size_t ws = kWorkspaceBytes;
  DTRAIN_CUDA_RETURN_IF_ERROR(
      cublasLtMatmulPreferenceSetAttribute(pref.d, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)));
  // The heuristic otherwise assumes 256-byte aligned operands; tell it what
  // these pointers guarantee so it never picks a kernel they would break.
  const std::pair<cublasLtMatmulPreferenceAttributes_t, const void*> operands[] = {
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, a_prime},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, b_prime},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, c},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, c}};
  for (const auto& [attr, ptr] : operands) {
    const uint32_t align = alignment(ptr);
    DTRAIN_CUDA_RETURN_IF_ERROR(cublasLtMatmulPreferenceSetAttribute(pref.d, attr, &align, sizeof(align)));
  }
  cublasLtMatmulHeuristicResult_t heuristic{};
  int found = 0;
  const cublasStatus_t hs = cublasLtMatmulAlgoGetHeuristic(ctx.handle, op, plan->la.d, plan->lb.d, plan->lc.d,
                                                           plan->lc.d, pref.d, 1, &heuristic, &found);
  if (hs == CUBLAS_STATUS_NOT_SUPPORTED || (hs == CUBLAS_STATUS_SUCCESS && found == 0)) {
    return runtime_error("cuBLASLt has no algorithm for the matmul " + shape_text(p) + " on gpu:" +
                         std::to_string(dev.index));
  }
  DTRAIN_CUDA_RETURN_IF_ERROR(hs);
  plan->algo = heuristic.algo;
  return plan;
}

// Runs the column-major problem `p` with a' = our B, b' = our A, through the
// context's plan for it (made on first use). REQUIRES: ctx.mu held.
Status lt_matmul(GpuDevice& dev, LtContext& ctx, const LtGemmPlan& p, const float* a_prime, const float* b_prime,
                 float* c, cublasLtEpilogue_t epilogue, const float* bias, MathMode mode) {
  const LtPlanKey key = plan_key(p, epilogue, bias != nullptr, mode, a_prime, b_prime, c);
  auto it = ctx.plans.find(key);
  if (it == ctx.plans.end()) {
    Result<std::unique_ptr<LtPlan>> made = make_plan(dev, ctx, p, epilogue, mode, a_prime, b_prime, c);
    if (!made.ok()) return made.error();
    it = ctx.plans.emplace(key, std::move(*made)).first;
  }
  LtPlan& plan = *it->second;
  if (bias != nullptr) {
    DTRAIN_CUDA_RETURN_IF_ERROR(
        cublasLtMatmulDescSetAttribute(plan.op.d, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)));
  }
  const float alpha = 1.0f, beta = 0.0f;
  return DTRAIN_CUDA_STATUS(cublasLtMatmul(ctx.handle, plan.op.d, &alpha, a_prime, plan.la.d, b_prime, plan.lb.d,
                                           &beta, c, plan.lc.d, c, plan.lc.d, &plan.algo, ctx.workspace.get(),
                                           kWorkspaceBytes, dev.compute.get()));
}

cublasLtEpilogue_t lt_epilogue(Epilogue e) {
  switch (e) {
    case Epilogue::kBias: return CUBLASLT_EPILOGUE_BIAS;
    case Epilogue::kBiasRelu: return CUBLASLT_EPILOGUE_RELU_BIAS;
    case Epilogue::kRelu: return CUBLASLT_EPILOGUE_RELU;
    case Epilogue::kNone: break;
  }
  return CUBLASLT_EPILOGUE_DEFAULT;
}

// A device vector of at least n ones on ctx, grown (with one synchronous
// upload) only when a larger n is first seen. REQUIRES: ctx.mu held.
Result<const float*> ones(GpuDevice& dev, LtContext& ctx, int64_t n) {
  if (ctx.ones_n < n) {
    ctx.ones.reset();
    ctx.ones_n = 0;
    Result<CachedBuffer> buf =
        dev.allocator.allocate_buffer(static_cast<size_t>(n) * sizeof(float), stream_id(dev.compute));
    if (!buf.ok()) return buf.error();
    const std::vector<float> host(static_cast<size_t>(n), 1.0f);
    if (Status s = copy_async(buf->get(), host.data(), host.size() * sizeof(float), dev.compute); !s.ok())
      return s.error();
    if (Status s = dev.compute.synchronize(); !s.ok()) return s.error();  // `host` dies here
    ctx.ones = std::move(*buf);
    ctx.ones_n = n;
  }
  return static_cast<const float*>(ctx.ones.floats());
}

}  // namespace

LtGemmPlan plan_row_major(const kernels::MatmulShape& s) {
  LtGemmPlan p;
  p.m = s.n;
  p.n = s.m;
  p.k = s.k;
  p.trans_a = s.trans_b;
  p.trans_b = s.trans_a;
  // Our B, row-major (K, N) is column-major (N, K); stored (N, K) it is column-major (K, N).
  p.a_rows = s.trans_b ? s.k : s.n;
  p.a_cols = s.trans_b ? s.n : s.k;
  p.lda = p.a_rows;
  // Our A, row-major (M, K) is column-major (K, M); stored (K, M) it is column-major (M, K).
  p.b_rows = s.trans_a ? s.m : s.k;
  p.b_cols = s.trans_a ? s.k : s.m;
  p.ldb = p.b_rows;
  p.c_rows = s.n;
  p.c_cols = s.m;
  p.ldc = s.n;
  p.batch = s.batch;
  p.stride_a = s.k * s.n;
  p.stride_b = s.m * s.k;
  p.stride_c = s.m * s.n;
  return p;
}

Status matmul(GpuDevice& dev, const kernels::MatmulShape& s, const float* a, const float* b, const float* bias,
              float* c, Epilogue epilogue, MathMode mode) {
  if (s.batch < 1 || s.batch > INT32_MAX) {
    return runtime_error("cuda::matmul: a batch of " + std::to_string(s.batch) +
                         " products: cuBLASLt takes 1 to 2^31-1 products per call");
  }
  const bool wants_bias = epilogue == Epilogue::kBias || epilogue == Epilogue::kBiasRelu;
  if (wants_bias != (bias != nullptr)) {
    return runtime_error(std::string("cuda::matmul: the epilogue ") + (wants_bias ? "needs" : "takes no") +
                         " bias vector");
  }
  Result<LtContext*> ctx = lt_context(dev);
  if (!ctx.ok()) return ctx.error();
  std::lock_guard<std::mutex> lock((*ctx)->mu);
  return lt_matmul(dev, **ctx, plan_row_major(s), b, a, c, lt_epilogue(epilogue), bias, mode);
}

Status dense_forward(GpuDevice& dev, const DenseShape& s, const float* x, const float* w, const float* b, bool relu,
                     float* y, MathMode mode) {
  const Epilogue e = b != nullptr ? (relu ? Epilogue::kBiasRelu : Epilogue::kBias)
                                  : (relu ? Epilogue::kRelu : Epilogue::kNone);
  return matmul(dev, kernels::MatmulShape{s.batch, s.units, s.in, false, false}, x, w, b, y, e, mode);
}

Status dense_backward_data(GpuDevice& dev, const DenseShape& s, const float* dy, const float* w, float* dx,
                           MathMode mode) {
  // dx (batch, in) = dy (batch, units) x w^T, w stored (in, units).
  return matmul(dev, kernels::MatmulShape{s.batch, s.in, s.units, false, true}, dy, w, nullptr, dx, Epilogue::kNone,
                mode);
}

Status dense_backward_weights(GpuDevice& dev, const DenseShape& s, const float* x, const float* dy, float* dw,
                              float* db, MathMode mode) {
  // dw (in, units) = x^T dy, x stored (batch, in). In the column-major plan
  // cuBLASLt's A is dy as (units, batch) and k = batch, so BGRADA (the sum of
  // A over k, one value per row of D) is exactly db.
  const LtGemmPlan p = plan_row_major(kernels::MatmulShape{s.in, s.units, s.batch, true, false});
  Result<LtContext*> ctx = lt_context(dev);
  if (!ctx.ok()) return ctx.error();
  std::lock_guard<std::mutex> lock((*ctx)->mu);
  if (db == nullptr) return lt_matmul(dev, **ctx, p, dy, x, dw, CUBLASLT_EPILOGUE_DEFAULT, nullptr, mode);
  // BGRADA is an optimisation: any failure of it (no algorithm, an
  // unsupported shape or alignment, a failed call) falls back to a plain
  // matmul and a column sum, and the problem is remembered so that later
  // steps go straight to the fallback.
  const LtPlanKey key = plan_key(p, CUBLASLT_EPILOGUE_BGRADA, true, mode, dy, x, dw);
  if ((*ctx)->no_bgrada.count(key) == 0) {
    if (lt_matmul(dev, **ctx, p, dy, x, dw, CUBLASLT_EPILOGUE_BGRADA, db, mode).ok()) return {};
    (*ctx)->no_bgrada.insert(key);
    (*ctx)->plans.erase(key);
  }
  if (Status st = lt_matmul(dev, **ctx, p, dy, x, dw, CUBLASLT_EPILOGUE_DEFAULT, nullptr, mode); !st.ok()) return st;
  // db (1, units) = ones (1, batch) x dy (batch, units).
  Result<const float*> one = ones(dev, **ctx, s.batch);
  if (!one.ok()) return one.error();
  return lt_matmul(dev, **ctx, plan_row_major(kernels::MatmulShape{1, s.units, s.batch, false, false}), dy, *one, db,
                   CUBLASLT_EPILOGUE_DEFAULT, nullptr, mode);
}

}  // namespace dtrain::cuda
