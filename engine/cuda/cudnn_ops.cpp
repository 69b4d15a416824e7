// cuDNN convolution, pooling and softmax (cudnn_ops.hpp). This file is also
// the one adapter to cuDNN 9's API: the legacy descriptor calls used here are
// declared (CUDNN_DEPRECATED, silent unless CUDNN_WARN_DEPRECATED) in
// cudnn_ops.h and cudnn_cnn.h; a move to the graph API belongs here alone.
#include "engine/cuda/cudnn_ops.hpp"

#include <cudnn.h>

#include <map>
#include <memory>
#include <mutex>
#include <iterator>
#include <string>
#include <vector>

#include "engine/cuda/check.hpp"
#include "engine/cuda/eltwise.hpp"
#include "engine/cuda/runtime.hpp"

namespace dtrain::cuda {
namespace {

struct TensorDesc {
  cudnnTensorDescriptor_t d = nullptr;
  ~TensorDesc() { if (d) cudnnDestroyTensorDescriptor(d); }
};
struct FilterDesc {
  cudnnFilterDescriptor_t d = nullptr;
  ~FilterDesc() { if (d) cudnnDestroyFilterDescriptor(d); }
};
struct ConvDesc {
  cudnnConvolutionDescriptor_t d = nullptr;
  ~ConvDesc() { if (d) cudnnDestroyConvolutionDescriptor(d); }
};
struct PoolDesc {
  cudnnPoolingDescriptor_t d = nullptr;
  ~PoolDesc() { if (d) cudnnDestroyPoolingDescriptor(d); }
};

int i32(int64_t v) { return static_cast<int>(v); }

// An NHWC float tensor (n, h, w, c).
Status nhwc(TensorDesc& t, int64_t n, int64_t h, int64_t w, int64_t c) {
  DTRAIN_CUDA_RETURN_IF_ERROR(cudnnCreateTensorDescriptor(&t.d));
  return DTRAIN_CUDA_STATUS(
      cudnnSetTensor4dDescriptor(t.d, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, i32(n), i32(c), i32(h), i32(w)));
}

Result<CachedBuffer> scratch(GpuDevice& dev, size_t bytes) {
  return dev.allocator.allocate_buffer(bytes, stream_id(dev.compute));
}

// Weights between our HWIO (kh, kw, ic, oc) and cuDNN's NHWC filter layout
// KRSC (oc, kh, kw, ic): a transpose of a (kh*kw*ic, oc) matrix, done by
// cudnnTransformTensor between two strided views of (oc, kh*kw*ic).
Status transpose_weights(cudnnHandle_t h, const kernels::Conv2dShape& s, const float* src, float* dst,
                         bool to_krsc) {
  const int k = i32(s.oc), j = i32(s.kh * s.kw * s.ic);
  TensorDesc hwio, krsc;
  DTRAIN_CUDA_RETURN_IF_ERROR(cudnnCreateTensorDescriptor(&hwio.d));
  DTRAIN_CUDA_RETURN_IF_ERROR(cudnnCreateTensorDescriptor(&krsc.d));
  DTRAIN_CUDA_RETURN_IF_ERROR(cudnnSetTensor4dDescriptorEx(hwio.d, CUDNN_DATA_FLOAT, k, j, 1, 1, 1, k, 1, 1));
  DTRAIN_CUDA_RETURN_IF_ERROR(cudnnSetTensor4dDescriptorEx(krsc.d, CUDNN_DATA_FLOAT, k, j, 1, 1, j, 1, 1, 1));
  const float one = 1.0f, zero = 0.0f;
  return DTRAIN_CUDA_STATUS(to_krsc ? cudnnTransformTensor(h, &one, hwio.d, src, &zero, krsc.d, dst)
                                    : cudnnTransformTensor(h, &one, krsc.d, src, &zero, hwio.d, dst));
}

// Copies x (n, ih, iw, c) into the interior of the zeroed padded buffer
// (n, ph, pw, c) at (top, left), or (to_padded = false) the interior back out.
Status pad_copy(GpuDevice& dev, const kernels::Conv2dShape& s, const ConvPadPlan& p, const float* from, float* to,
                bool to_padded) {
  const size_t row = static_cast<size_t>(s.iw * s.ic) * sizeof(float);
  const size_t prow = static_cast<size_t>(p.padded_w * s.ic) * sizeof(float);
  if (to_padded) {
    DTRAIN_CUDA_RETURN_IF_ERROR(
        cudaMemsetAsync(to, 0, prow * static_cast<size_t>(p.padded_h * s.n), dev.compute.get()));
  }
  cudaMemcpy3DParms c{};
  const cudaPitchedPtr dense = make_cudaPitchedPtr(const_cast<float*>(to_padded ? from : to), row, row,
                                                   static_cast<size_t>(s.ih));
  const cudaPitchedPtr padded = make_cudaPitchedPtr(const_cast<float*>(to_padded ? to : from), prow, prow,
                                                    static_cast<size_t>(p.padded_h));
  const cudaPos interior = make_cudaPos(static_cast<size_t>(s.pad_left * s.ic) * sizeof(float),
                                        static_cast<size_t>(s.pad_top), 0);
  c.srcPtr = to_padded ? dense : padded;
  c.dstPtr = to_padded ? padded : dense;
  if (to_padded) c.dstPos = interior; else c.srcPos = interior;
  c.extent = make_cudaExtent(row, static_cast<size_t>(s.ih), static_cast<size_t>(s.n));
  c.kind = cudaMemcpyDeviceToDevice;
  return DTRAIN_CUDA_STATUS(cudaMemcpy3DAsync(&c, dev.compute.get()));
}

// The descriptors of one convolution (x as cuDNN sees it: padded when the plan says so).
struct ConvDescs {
  TensorDesc x, y, bias;
  FilterDesc w;
  ConvDesc conv;
};

Status make_conv_descs(const kernels::Conv2dShape& s, const ConvPadPlan& p, ConvDescs& d) {
  if (Status st = nhwc(d.x, s.n, p.padded_h, p.padded_w, s.ic); !st.ok()) return st;
  if (Status st = nhwc(d.y, s.n, s.oh, s.ow, s.oc); !st.ok()) return st;
  if (Status st = nhwc(d.bias, 1, 1, 1, s.oc); !st.ok()) return st;
  DTRAIN_CUDA_RETURN_IF_ERROR(cudnnCreateFilterDescriptor(&d.w.d));
  DTRAIN_CUDA_RETURN_IF_ERROR(cudnnSetFilter4dDescriptor(d.w.d, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NHWC, i32(s.oc),
                                                         i32(s.ic), i32(s.kh), i32(s.kw)));
  DTRAIN_CUDA_RETURN_IF_ERROR(cudnnCreateConvolutionDescriptor(&d.conv.d));
  DTRAIN_CUDA_RETURN_IF_ERROR(cudnnSetConvolution2dDescriptor(d.conv.d, i32(p.pad_h), i32(p.pad_w), i32(s.sh),
                                                              i32(s.sw), i32(s.dh), i32(s.dw),
                                                              CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  int n = 0, c = 0, h = 0, w = 0;
  DTRAIN_CUDA_RETURN_IF_ERROR(cudnnGetConvolution2dForwardOutputDim(d.conv.d, d.x.d, d.w.d, &n, &c, &h, &w));
  if (h != s.oh || w != s.ow || c != s.oc || n != s.n) {
    return runtime_error("conv2d on the GPU: cuDNN computes an output of " + std::to_string(h) + "x" +
                         std::to_string(w) + "x" + std::to_string(c) + " but the shape says " +
                         std::to_string(s.oh) + "x" + std::to_string(s.ow) + "x" + std::to_string(s.oc));
  }
  return {};
}

// One convolution direction's choice: cuDNN's algorithm (a
// cudnnConvolution*Algo_t), the math type it runs with, its workspace.
struct ConvAlgo {
  bool chosen = false;
  int algo = 0;
  cudnnMathType_t math = CUDNN_FMA_MATH;
  size_t ws_bytes = 0;
};

// One convolution's descriptors and, per direction, the algorithm chosen on
// that direction's first call: made once per distinct shape and policy, so a
// warm call only runs its kernels.
struct ConvPlan {
  ConvPadPlan p;
  ConvDescs d;
  ConvAlgo fwd, bwd_data, bwd_filter;
};
using ConvPlanKey = std::vector<int64_t>;

ConvPlanKey conv_plan_key(const kernels::Conv2dShape& s, const ConvPolicy& policy) {
  return {s.n,       s.ih,          s.iw,           s.ic,       s.oh,      s.ow,
          s.oc,      s.kh,          s.kw,           s.sh,       s.sw,      s.dh,
          s.dw,      s.pad_top,     s.pad_bottom,   s.pad_left, s.pad_right, int64_t(policy.mode),
          policy.deterministic};
}

// One GPU's cuDNN handle, bound to its compute stream, and its convolution
// plans; mu serialises calls.
struct DnnContext {
  std::mutex mu;
  cudnnHandle_t handle = nullptr;
  std::map<ConvPlanKey, std::unique_ptr<ConvPlan>> conv_plans;
};

Result<DnnContext*> dnn_context(GpuDevice& dev) {
  static std::mutex mu;
  static auto* contexts = new std::map<int, std::unique_ptr<DnnContext>>();  // never destroyed, like gpu_device()
  std::lock_guard<std::mutex> lock(mu);
  auto it = contexts->find(dev.index);
  if (it != contexts->end()) return it->second.get();
  Result<DeviceGuard> guard = DeviceGuard::set(dev.index);
  if (!guard.ok()) return guard.error();
  auto ctx = std::make_unique<DnnContext>();
  DTRAIN_CUDA_RETURN_IF_ERROR(cudnnCreate(&ctx->handle));
  DTRAIN_CUDA_RETURN_IF_ERROR(cudnnSetStream(ctx->handle, dev.compute.get()));
  DnnContext* raw = ctx.get();
  contexts->emplace(dev.index, std::move(ctx));
  return raw;
}

const char* const kFwdAlgoNames[] = {
    "CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM", "CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM",
    "CUDNN_CONVOLUTION_FWD_ALGO_GEMM",          "CUDNN_CONVOLUTION_FWD_ALGO_DIRECT",
    "CUDNN_CONVOLUTION_FWD_ALGO_FFT",           "CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING",
    "CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD",      "CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED"};
const char* const kBwdDataAlgoNames[] = {
    "CUDNN_CONVOLUTION_BWD_DATA_ALGO_0",        "CUDNN_CONVOLUTION_BWD_DATA_ALGO_1",
    "CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT",      "CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING",
    "CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD", "CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED"};
const char* const kBwdFilterAlgoNames[] = {
    "CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0",        "CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1",
    "CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT",      "CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3",
    "CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD", "CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED",
    "CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING"};
static_assert(std::size(kFwdAlgoNames) == CUDNN_CONVOLUTION_FWD_ALGO_COUNT);
static_assert(std::size(kBwdDataAlgoNames) == CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT);
static_assert(std::size(kBwdFilterAlgoNames) == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT);

const char* algo_name(cudnnConvolutionFwdAlgo_t a) {
  return a >= 0 && a < CUDNN_CONVOLUTION_FWD_ALGO_COUNT ? kFwdAlgoNames[a] : "an unnamed forward algorithm";
}
const char* algo_name(cudnnConvolutionBwdDataAlgo_t a) {
  return a >= 0 && a < CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT ? kBwdDataAlgoNames[a]
                                                              : "an unnamed backward-data algorithm";
}
const char* algo_name(cudnnConvolutionBwdFilterAlgo_t a) {
  return a >= 0 && a < CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT ? kBwdFilterAlgoNames[a]
                                                                : "an unnamed backward-filter algorithm";
}

// The notes of conv_algorithm_notes(): each distinct line once, in first-use order.
struct AlgoNotes {
  std::mutex mu;
  std::vector<std::string> lines;
};
AlgoNotes& algo_notes() {
  static auto* notes = new AlgoNotes();  // never destroyed, like dnn_context()
  return *notes;
}

std::string dims(int64_t a, int64_t b) { return std::to_string(a) + "x" + std::to_string(b); }

void note_algorithm(const kernels::Conv2dShape& s, const char* what, const char* name, bool deterministic,
                    bool offered_deterministic, bool tensor_op) {
  std::string line = "cuDNN conv2d " + std::to_string(s.n) + "x" + dims(s.ih, s.iw) + "x" + std::to_string(s.ic) +
                     " -> " + std::to_string(s.n) + "x" + dims(s.oh, s.ow) + "x" + std::to_string(s.oc) +
                     ", kernel " + dims(s.kh, s.kw) + ", strides " + dims(s.sh, s.sw) + ", dilation " +
                     dims(s.dh, s.dw) + ": " + what + " " + name + " (" +
                     (deterministic ? std::string("deterministic")
                                    : offered_deterministic ? std::string("non-deterministic")
                                                            : std::string("non-deterministic: cuDNN offers no "
                                                                          "deterministic one")) +
                     (tensor_op ? ", TF32 tensor-op math)" : ", FMA math)");
  AlgoNotes& notes = algo_notes();
  std::lock_guard<std::mutex> lock(notes.mu);
  for (const std::string& l : notes.lines) {
    if (l == line) return;
  }
  notes.lines.push_back(std::move(line));
}

bool is_tensor_op(cudnnMathType_t m) {
  return m == CUDNN_TENSOR_OP_MATH || m == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
}

// The algorithm of cuDNN's heuristic ranking (perf, best first) that
// pick_conv_algorithm chooses under the policy. For kFloat32 it runs with
// CUDNN_FMA_MATH (also set before the query) so no TF32 kernel can run; for
// kTf32 with the chosen algorithm's own math type. The choice is noted for
// conv_algorithm_notes(). ws_bytes is left for the caller.
template <class Perf>
Result<ConvAlgo> pick(const Perf* perf, int count, const ConvPolicy& policy, const kernels::Conv2dShape& s,
                      const char* what) {
  std::vector<ConvAlgoCandidate> ranked(static_cast<size_t>(count < 0 ? 0 : count));
  bool offered_deterministic = false;
  for (size_t i = 0; i < ranked.size(); ++i) {
    ranked[i].usable = perf[i].status == CUDNN_STATUS_SUCCESS;
    ranked[i].tensor_op = is_tensor_op(perf[i].mathType);
    ranked[i].deterministic = perf[i].determinism == CUDNN_DETERMINISTIC;
    const bool allowed = ranked[i].usable && !(policy.mode == MathMode::kFloat32 && ranked[i].tensor_op);
    offered_deterministic = offered_deterministic || (allowed && ranked[i].deterministic);
  }
  const ConvAlgoPick chosen = pick_conv_algorithm(ranked, policy);
  if (chosen.index < 0) {
    return runtime_error(std::string("cuDNN offers no ") + what + " algorithm" +
                         (policy.mode == MathMode::kFloat32 ? " with float32 (FMA) math" : "") +
                         " for this convolution");
  }
  const Perf& p = perf[chosen.index];
  ConvAlgo a;
  a.chosen = true;
  a.algo = static_cast<int>(p.algo);
  a.math = policy.mode == MathMode::kTf32 ? p.mathType : CUDNN_FMA_MATH;
  note_algorithm(s, what, algo_name(p.algo), chosen.deterministic, offered_deterministic, is_tensor_op(a.math));
  return a;
}

cudnnMathType_t math(MathMode mode) { return mode == MathMode::kTf32 ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH; }

// What every convolution call starts with: the device's cuDNN handle, held
// locked; the convolution's plan (made on its first call); the explicitly
// padded input buffer when the padding is asymmetric (filled from `x_to_pad`
// unless that is null); and scratch for the weights in cuDNN's KRSC layout.
// Members are destroyed in reverse order: the buffers go back to the
// allocator while the lock is still held.
struct ConvCall {
  std::unique_lock<std::mutex> lock;
  cudnnHandle_t h = nullptr;
  ConvPlan* plan = nullptr;
  CachedBuffer padded;
  CachedBuffer weights;
};

Status prepare_conv(GpuDevice& dev, const kernels::Conv2dShape& s, const ConvPolicy& policy, const float* x_to_pad,
                    ConvCall& c) {
  Result<DnnContext*> ctx = dnn_context(dev);
  if (!ctx.ok()) return ctx.error();
  c.lock = std::unique_lock<std::mutex>((*ctx)->mu);
  c.h = (*ctx)->handle;
  const ConvPlanKey key = conv_plan_key(s, policy);
  auto it = (*ctx)->conv_plans.find(key);
  if (it == (*ctx)->conv_plans.end()) {
    auto plan = std::make_unique<ConvPlan>();
    plan->p = conv_pad_plan(s);
    if (Status st = make_conv_descs(s, plan->p, plan->d); !st.ok()) return st;
    it = (*ctx)->conv_plans.emplace(key, std::move(plan)).first;
  }
  c.plan = it->second.get();
  const ConvPadPlan& p = c.plan->p;
  if (p.explicit_pad) {
    Result<CachedBuffer> b = scratch(dev, static_cast<size_t>(s.n * p.padded_h * p.padded_w * s.ic) * sizeof(float));
    if (!b.ok()) return b.error();
    c.padded = std::move(*b);
    if (x_to_pad != nullptr) {
      if (Status st = pad_copy(dev, s, p, x_to_pad, c.padded.floats(), true); !st.ok()) return st;
    }
  }
  Result<CachedBuffer> wk = scratch(dev, static_cast<size_t>(s.kh * s.kw * s.ic * s.oc) * sizeof(float));
  if (!wk.ok()) return wk.error();
  c.weights = std::move(*wk);
  return {};
}

}  // namespace

ConvAlgoPick pick_conv_algorithm(std::span<const ConvAlgoCandidate> ranked, const ConvPolicy& p) {
  const auto allowed = [&](const ConvAlgoCandidate& c) {
    return c.usable && !(p.mode == MathMode::kFloat32 && c.tensor_op);
  };
  if (p.deterministic) {
    for (size_t i = 0; i < ranked.size(); ++i) {
      if (allowed(ranked[i]) && ranked[i].deterministic) return {static_cast<int>(i), true};
    }
  }
  for (size_t i = 0; i < ranked.size(); ++i) {
    if (allowed(ranked[i])) return {static_cast<int>(i), ranked[i].deterministic};
  }
  return {};
}

std::vector<std::string> conv_algorithm_notes() {
  AlgoNotes& notes = algo_notes();
  std::lock_guard<std::mutex> lock(notes.mu);
  return notes.lines;
}

ConvPadPlan conv_pad_plan(const kernels::Conv2dShape& s) {
  ConvPadPlan p;
  p.explicit_pad = s.pad_top != s.pad_bottom || s.pad_left != s.pad_right;
  p.padded_h = p.explicit_pad ? s.ih + s.pad_top + s.pad_bottom : s.ih;
  p.padded_w = p.explicit_pad ? s.iw + s.pad_left + s.pad_right : s.iw;
  p.pad_h = p.explicit_pad ? 0 : s.pad_top;
  p.pad_w = p.explicit_pad ? 0 : s.pad_left;
  return p;
}

PoolPadPlan pool_pad_plan(const kernels::Pool2dShape& s) {
  PoolPadPlan p;
  p.pad_h = s.pad_top;
  p.pad_w = s.pad_left;
  const int64_t span_h = s.ih + 2 * s.pad_top - s.kh, span_w = s.iw + 2 * s.pad_left - s.kw;
  p.supported = span_h >= 0 && span_w >= 0 && span_h / s.sh + 1 == s.oh && span_w / s.sw + 1 == s.ow;
  return p;
}

Status conv2d_forward(GpuDevice& dev, const kernels::Conv2dShape& s, const float* x, const float* w,
                      const float* bias, float* y, const ConvPolicy& policy) {
  ConvCall c;
  if (Status st = prepare_conv(dev, s, policy, x, c); !st.ok()) return st;
  const cudnnHandle_t h = c.h;
  const ConvPadPlan& p = c.plan->p;
  const ConvDescs& d = c.plan->d;
  ConvAlgo& a = c.plan->fwd;
  if (!a.chosen) {
    DTRAIN_CUDA_RETURN_IF_ERROR(cudnnSetConvolutionMathType(d.conv.d, math(policy.mode)));
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    int count = 0;
    DTRAIN_CUDA_RETURN_IF_ERROR(cudnnGetConvolutionForwardAlgorithm_v7(
        h, d.x.d, d.w.d, d.conv.d, d.y.d, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &count, perf));
    Result<ConvAlgo> chosen = pick(perf, count, policy, s, "forward");
    if (!chosen.ok()) return chosen.error();
    DTRAIN_CUDA_RETURN_IF_ERROR(cudnnSetConvolutionMathType(d.conv.d, chosen->math));
    DTRAIN_CUDA_RETURN_IF_ERROR(cudnnGetConvolutionForwardWorkspaceSize(
        h, d.x.d, d.w.d, d.conv.d, d.y.d, static_cast<cudnnConvolutionFwdAlgo_t>(chosen->algo), &chosen->ws_bytes));
    a = *chosen;
  }
  DTRAIN_CUDA_RETURN_IF_ERROR(cudnnSetConvolutionMathType(d.conv.d, a.math));
  if (Status st = transpose_weights(h, s, w, c.weights.floats(), true); !st.ok()) return st;
  Result<CachedBuffer> ws = scratch(dev, a.ws_bytes);
  if (!ws.ok()) return ws.error();
  const float one = 1.0f, zero = 0.0f;
  DTRAIN_CUDA_RETURN_IF_ERROR(cudnnConvolutionForward(h, &one, d.x.d, p.explicit_pad ? c.padded.floats() : x, d.w.d,
                                                      c.weights.floats(), d.conv.d,
                                                      static_cast<cudnnConvolutionFwdAlgo_t>(a.algo), ws->get(),
                                                      a.ws_bytes, &zero, d.y.d, y));
  if (bias != nullptr) DTRAIN_CUDA_RETURN_IF_ERROR(cudnnAddTensor(h, &one, d.bias.d, bias, &one, d.y.d, y));
  if (s.relu) return relu_forward(y, y, s.n * s.oh * s.ow * s.oc, dev.compute.get());
  return {};
}

Status conv2d_backward_data(GpuDevice& dev, const kernels::Conv2dShape& s, const float* dy, const float* w, float* dx,
                            const ConvPolicy& policy) {
  ConvCall c;
  if (Status st = prepare_conv(dev, s, policy, nullptr, c); !st.ok()) return st;
  const cudnnHandle_t h = c.h;
  const ConvPadPlan& p = c.plan->p;
  const ConvDescs& d = c.plan->d;
  ConvAlgo& a = c.plan->bwd_data;
  if (!a.chosen) {
    DTRAIN_CUDA_RETURN_IF_ERROR(cudnnSetConvolutionMathType(d.conv.d, math(policy.mode)));
    cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
    int count = 0;
    DTRAIN_CUDA_RETURN_IF_ERROR(cudnnGetConvolutionBackwardDataAlgorithm_v7(
        h, d.w.d, d.y.d, d.conv.d, d.x.d, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &count, perf));
    Result<ConvAlgo> chosen = pick(perf, count, policy, s, "backward-data");
    if (!chosen.ok()) return chosen.error();
    DTRAIN_CUDA_RETURN_IF_ERROR(cudnnSetConvolutionMathType(d.conv.d, chosen->math));
    DTRAIN_CUDA_RETURN_IF_ERROR(cudnnGetConvolutionBackwardDataWorkspaceSize(
        h, d.w.d, d.y.d, d.conv.d, d.x.d, static_cast<cudnnConvolutionBwdDataAlgo_t>(chosen->algo),
        &chosen->ws_bytes));
    a = *chosen;
  }
  DTRAIN_CUDA_RETURN_IF_ERROR(cudnnSetConvolutionMathType(d.conv.d, a.math));
  if (Status st = transpose_weights(h, s, w, c.weights.floats(), true); !st.ok()) return st;
  Result<CachedBuffer> ws = scratch(dev, a.ws_bytes);
  if (!ws.ok()) return ws.error();
  const float one = 1.0f, zero = 0.0f;
  float* out = p.explicit_pad ? c.padded.floats() : dx;
  DTRAIN_CUDA_RETURN_IF_ERROR(cudnnConvolutionBackwardData(h, &one, d.w.d, c.weights.floats(), d.y.d, dy, d.conv.d,
                                                           static_cast<cudnnConvolutionBwdDataAlgo_t>(a.algo),
                                                           ws->get(), a.ws_bytes, &zero, d.x.d, out));
  if (p.explicit_pad) return pad_copy(dev, s, p, c.padded.floats(), dx, false);
  return {};
}

Status conv2d_backward_weights(GpuDevice& dev, const kernels::Conv2dShape& s, const float* x, const float* dy,
                               float* dw, float* db, const ConvPolicy& policy) {
  ConvCall c;
  if (Status st = prepare_conv(dev, s, policy, x, c); !st.ok()) return st;
  const cudnnHandle_t h = c.h;
  const ConvPadPlan& p = c.plan->p;
  const ConvDescs& d = c.plan->d;
  ConvAlgo& a = c.plan->bwd_filter;
  if (!a.chosen) {
    DTRAIN_CUDA_RETURN_IF_ERROR(cudnnSetConvolutionMathType(d.conv.d, math(policy.mode)));
    cudnnConvolutionBwdFilterAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
    int count = 0;
    DTRAIN_CUDA_RETURN_IF_ERROR(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
        h, d.x.d, d.y.d, d.conv.d, d.w.d, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &count, perf));
    Result<ConvAlgo> chosen = pick(perf, count, policy, s, "backward-filter");
    if (!chosen.ok()) return chosen.error();
    DTRAIN_CUDA_RETURN_IF_ERROR(cudnnSetConvolutionMathType(d.conv.d, chosen->math));
    DTRAIN_CUDA_RETURN_IF_ERROR(cudnnGetConvolutionBackwardFilterWorkspaceSize(
        h, d.x.d, d.y.d, d.conv.d, d.w.d, static_cast<cudnnConvolutionBwdFilterAlgo_t>(chosen->algo),
        &chosen->ws_bytes));
    a = *chosen;
  }
  DTRAIN_CUDA_RETURN_IF_ERROR(cudnnSetConvolutionMathType(d.conv.d, a.math));
  Result<CachedBuffer> ws = scratch(dev, a.ws_bytes);
  if (!ws.ok()) return ws.error();
  const float one = 1.0f, zero = 0.0f;
  DTRAIN_CUDA_RETURN_IF_ERROR(cudnnConvolutionBackwardFilter(h, &one, d.x.d, p.explicit_pad ? c.padded.floats() : x,
                                                             d.y.d, dy, d.conv.d,
                                                             static_cast<cudnnConvolutionBwdFilterAlgo_t>(a.algo),
                                                             ws->get(), a.ws_bytes, &zero, d.w.d,
                                                             c.weights.floats()));
  if (Status st = transpose_weights(h, s, c.weights.floats(), dw, false); !st.ok()) return st;
  if (db != nullptr) DTRAIN_CUDA_RETURN_IF_ERROR(cudnnConvolutionBackwardBias(h, &one, d.y.d, dy, &zero, d.bias.d, db));
  return {};
}

namespace {

struct PoolDescs {
  TensorDesc x, y;
  PoolDesc pool;
};

Status make_pool_descs(const kernels::Pool2dShape& s, PoolDescs& d) {
  const PoolPadPlan p = pool_pad_plan(s);
  if (!p.supported) {
    return runtime_error("pool2d on the GPU: padding top " + std::to_string(s.pad_top) + " bottom " +
                         std::to_string(s.pad_bottom) + ", left " + std::to_string(s.pad_left) + " right " +
                         std::to_string(s.pad_right) +
                         " pads more after the input than before, which cuDNN's pooling (one pad per side pair) cannot place; "
                         "such a pooling runs on the CPU only (the support table refuses pool2d_pad_after on GPUs)");
  }
  if (Status st = nhwc(d.x, s.n, s.ih, s.iw, s.c); !st.ok()) return st;
  if (Status st = nhwc(d.y, s.n, s.oh, s.ow, s.c); !st.ok()) return st;
  DTRAIN_CUDA_RETURN_IF_ERROR(cudnnCreatePoolingDescriptor(&d.pool.d));
  const cudnnPoolingMode_t mode =
      s.kind == kernels::PoolKind::kMax ? CUDNN_POOLING_MAX : CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING;
  return DTRAIN_CUDA_STATUS(cudnnSetPooling2dDescriptor(d.pool.d, mode, CUDNN_NOT_PROPAGATE_NAN, i32(s.kh),
                                                        i32(s.kw), i32(p.pad_h), i32(p.pad_w), i32(s.sh),
                                                        i32(s.sw)));
}

}  // namespace

Status pool2d_forward(GpuDevice& dev, const kernels::Pool2dShape& s, const float* x, float* y) {
  Result<DnnContext*> ctx = dnn_context(dev);
  if (!ctx.ok()) return ctx.error();
  std::lock_guard<std::mutex> lock((*ctx)->mu);
  PoolDescs d;
  if (Status st = make_pool_descs(s, d); !st.ok()) return st;
  const float one = 1.0f, zero = 0.0f;
  return DTRAIN_CUDA_STATUS(cudnnPoolingForward((*ctx)->handle, d.pool.d, &one, d.x.d, x, &zero, d.y.d, y));
}

Status pool2d_backward(GpuDevice& dev, const kernels::Pool2dShape& s, const float* x, const float* y,
                       const float* dy, float* dx) {
  Result<DnnContext*> ctx = dnn_context(dev);
  if (!ctx.ok()) return ctx.error();
  std::lock_guard<std::mutex> lock((*ctx)->mu);
  PoolDescs d;
  if (Status st = make_pool_descs(s, d); !st.ok()) return st;
  const float one = 1.0f, zero = 0.0f;
  return DTRAIN_CUDA_STATUS(
      cudnnPoolingBackward((*ctx)->handle, d.pool.d, &one, d.y.d, y, d.y.d, dy, d.x.d, x, &zero, d.x.d, dx));
}

Status softmax_forward(GpuDevice& dev, int64_t rows, int64_t cols, const float* x, float* y) {
  Result<DnnContext*> ctx = dnn_context(dev);
  if (!ctx.ok()) return ctx.error();
  std::lock_guard<std::mutex> lock((*ctx)->mu);
  TensorDesc t;
  DTRAIN_CUDA_RETURN_IF_ERROR(cudnnCreateTensorDescriptor(&t.d));
  DTRAIN_CUDA_RETURN_IF_ERROR(
      cudnnSetTensor4dDescriptor(t.d, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, i32(rows), i32(cols), 1, 1));
  const float one = 1.0f, zero = 0.0f;
  return DTRAIN_CUDA_STATUS(cudnnSoftmaxForward((*ctx)->handle, CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_MODE_INSTANCE,
                                                &one, t.d, x, &zero, t.d, y));
}

}  // namespace dtrain::cuda
