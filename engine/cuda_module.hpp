// The boundary between dtrain and its CUDA module. libdtrain_cuda.so holds every
// source that calls CUDA and links cudart, cuBLAS(Lt), cuDNN and NCCL; the dtrain
// executable links none of them and loads the module only when asked (a GPU job,
// `dtrain devices`), so a CPU run of a CUDA build maps no CUDA library. This one
// header is shared by both sides: the table the module exports, and the loader.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/base/status.hpp"

// ---- The table (plain C layout; no C++ type and no exception crosses it) ----
extern "C" {

enum { kDtrainCudaMaxGpus = 64 };

// One GPU as cudaGetDeviceProperties describes it.
struct DtrainCudaGpu {
  int32_t index;
  char name[256];
  uint64_t total_memory;  // bytes
  int32_t cc_major, cc_minor;
  int32_t multiprocessors;
};

// What discover_gpus finds. Text fields are NUL-terminated; "" when unknown.
struct DtrainCudaReport {
  char cuda_runtime[32], cuda_driver[32], cublas[32], cudnn[32], nccl[32];  // "13.0", "9.19.0", ...
  char status[512];  // "ok", or why this process has no usable GPU
  int32_t gpu_count;  // entries of gpus filled, at most kDtrainCudaMaxGpus
  DtrainCudaGpu gpus[kDtrainCudaMaxGpus];
};

// An entry's failure, one line.
struct DtrainCudaError {
  char message[1024];
};

struct DtrainCudaMatmul {
  int64_t m, n, k;
  int32_t trans_a, trans_b;  // a stored (k, m); b stored (n, k)
  int32_t relu;              // relu after the bias, in the epilogue
  int32_t tf32;              // TF32 tensor cores (precision.matmul: tf32)
  const float* a;            // (m, k)
  const float* b;            // (k, n)
  const float* bias;         // (n) or null
  float* c;                  // (m, n); aliases none of the above
};

enum DtrainCudaEltwiseKind : int32_t {
  kDtrainEwRelu = 0,         // out = relu(a)
  kDtrainEwReluGrad = 1,     // out = a > 0 ? b : 0           (a: forward output y, b: dy)
  kDtrainEwSigmoid = 2,      // out = 1 / (1 + exp(-a))
  kDtrainEwSigmoidGrad = 3,  // out = b * a * (1 - a)          (a: y, b: dy)
  kDtrainEwTanh = 4,         // out = tanh(a)
  kDtrainEwTanhGrad = 5,     // out = b * (1 - a * a)          (a: y, b: dy)
  kDtrainEwMul = 6,          // out = a * b
  kDtrainEwAddInto = 7,      // out += a
  kDtrainEwScale = 8,        // out = alpha * a
};

struct DtrainCudaEltwise {
  int32_t kind;  // DtrainCudaEltwiseKind
  int64_t n;
  const float* a;
  const float* b;  // null unless the kind reads it
  float* out;      // may alias a or b
  float alpha;
};

enum DtrainCudaRowsKind : int32_t {
  kDtrainRowsSoftmax = 0,      // out (rows, cols) = softmax of each row of a
  kDtrainRowsSoftmaxGrad = 1,  // out = a * (b - sum(b * a)) per row (a: y, b: dy)
  kDtrainRowsSumRows = 2,      // out (cols) = sum over rows of a, in row order
};

struct DtrainCudaRows {
  int32_t kind;  // DtrainCudaRowsKind
  int64_t rows, cols;
  const float* a;
  const float* b;
  float* out;
};

struct DtrainCudaXent {
  int64_t rows, classes;     // logits (rows, classes), labels (rows) as floats
  const float* logits;
  const float* labels;
  float* dlogits;            // (rows, classes) or null: row_scale * (softmax - onehot)
  float row_scale;
  double* host_row_losses;   // host memory, rows doubles: lse - logit[label], NaN for a bad label
};

enum DtrainCudaReduceKind : int32_t {
  kDtrainReduceSumSquares = 0,  // sum of x^2 in double
  kDtrainReduceNonFinite = 1,   // number of inf/NaN elements
};

enum DtrainCudaOptimKind : int32_t { kDtrainOptimSgd = 0, kDtrainOptimAdam = 1 };

struct DtrainCudaOptim {
  int32_t kind;  // DtrainCudaOptimKind
  float* var;
  const float* grad;
  float* slot0;  // sgd: momentum (null without); adam: m
  float* slot1;  // adam: v
  int64_t n;
  float lr, momentum;  // sgd
  int32_t nesterov;    // sgd
  float lr_t, one_minus_b1, one_minus_b2, keep, eps;  // adam: engine/cuda/update_math.hpp's AdamScalars
};

// A 2-D convolution's geometry as engine/kernels/conv.hpp's Conv2dShape
// (NHWC activations, HWIO weights, TensorFlow's explicit padding, dilation 1 =
// none) and its operands, float32. Which pass reads which pointer:
enum DtrainCudaConvKind : int32_t {
  kDtrainConvForward = 0,       // y = conv(x, w) [+ bias] [then relu]
  kDtrainConvBackwardData = 1,  // dx = conv_transpose(dy, w)
  kDtrainConvBackwardWeights = 2,  // dw, db (or null) from x and dy
};

struct DtrainCudaConv {
  int32_t kind;  // DtrainCudaConvKind
  int32_t relu;  // forward only
  int32_t tf32;  // TF32 tensor cores (precision.matmul: tf32)
  int64_t n, ih, iw, ic, oh, ow, oc, kh, kw, sh, sw, dil_h, dil_w;  // dilation 1 = none
  int64_t pad_top, pad_left, pad_bottom, pad_right;
  const float* x;     // (n, ih, iw, ic)
  const float* w;     // (kh, kw, ic, oc)
  const float* bias;  // (oc) or null
  const float* dy;    // (n, oh, ow, oc)
  float* y;           // (n, oh, ow, oc)
  float* dx;          // (n, ih, iw, ic)
  float* dw;          // (kh, kw, ic, oc)
  float* db;          // (oc) or null
};

// Max or average (padding excluded) pooling, NHWC float32, geometry as
// engine/kernels/pool.hpp's Pool2dShape. backward reads x, y and dy.
struct DtrainCudaPool {
  int32_t backward;
  int32_t max;  // 1 max, 0 average
  int64_t n, ih, iw, c, oh, ow, kh, kw, sh, sw;
  int64_t pad_top, pad_left, pad_bottom, pad_right;
  const float* x;   // (n, ih, iw, c)
  float* y;         // (n, oh, ow, c): forward writes it, backward reads it
  const float* dy;  // (n, oh, ow, c)
  float* dx;        // (n, ih, iw, c), overwritten
};

// A GPU's caching allocator, as engine/cuda/caching_allocator.hpp counts it.
struct DtrainCudaMemStats {
  uint64_t allocated_bytes, reserved_bytes, peak_allocated_bytes, peak_reserved_bytes;
  uint64_t backend_allocations, backend_frees;  // cudaMalloc / cudaFree calls so far
};

// The entry points of one module build. Every entry is noexcept: the module
// catches its own exceptions and reports them through its results.
// Growing it: append entries at the end (never reorder, remove or change one)
// and bump kDtrainCudaModuleAbi. The loader accepts only its own version: the
// executable and the module come from one build, so another version means a
// stale or foreign file, and the loader says so instead of calling into it.
struct DtrainCudaModule {
  uint32_t abi_version;  // kDtrainCudaModuleAbi of the module's build
  uint32_t table_size;   // sizeof(DtrainCudaModule) of the module's build
  // The CUDA, cuBLAS, cuDNN and NCCL versions and the GPUs this process can
  // use. Fills all of *out. Thread-safe.
  void (*discover_gpus)(DtrainCudaReport* out) noexcept;

  // ---- ABI 2: the compute backend (engine/backend/cuda/ calls these) ----
  // Every entry below returns 0 on success, else nonzero with err->message
  // set to one line naming the failed call, its place and the GPU. `device`
  // is a GPU index; every pointer is that GPU's memory (from mem_alloc)
  // unless named host. Work is queued on the GPU's compute stream, in call
  // order; entries that hand a value back to the host wait for it.

  // `bytes` bytes from the GPU's caching allocator (no cudaMalloc once warm),
  // for use on its compute stream; *out is null for 0 bytes.
  int32_t (*mem_alloc)(int32_t device, uint64_t bytes, void** out, DtrainCudaError* err) noexcept;
  // Returns a block of mem_alloc to the cache (null is ignored).
  void (*mem_free)(int32_t device, void* p) noexcept;
  // Copies bytes; a device of -1 is host memory (pageable). Ordered after the
  // compute stream's work and complete (host side readable) on return.
  int32_t (*mem_copy)(int32_t dst_device, void* dst, int32_t src_device, const void* src, uint64_t bytes,
                      DtrainCudaError* err) noexcept;
  // Sets n 4-byte words at p to `word`.
  int32_t (*mem_fill32)(int32_t device, void* p, uint32_t word, int64_t n, DtrainCudaError* err) noexcept;
  // c (m, n) = op(a) op(b) [+ bias] [then relu], row-major float32 (cuBLASLt).
  int32_t (*matmul)(int32_t device, const DtrainCudaMatmul* args, DtrainCudaError* err) noexcept;
  // One elementwise kind over n float32 elements (DtrainCudaEltwise).
  int32_t (*eltwise)(int32_t device, const DtrainCudaEltwise* args, DtrainCudaError* err) noexcept;
  // Row-wise ops on a (rows, cols) float32 matrix (DtrainCudaRows).
  int32_t (*rows)(int32_t device, const DtrainCudaRows* args, DtrainCudaError* err) noexcept;
  // The dropout layer's forward (engine/cuda/dropout.hpp): x, mask, y (rows, per).
  int32_t (*dropout)(int32_t device, uint64_t key, int64_t example_offset, float rate, const float* x, float* mask,
                     float* y, int64_t rows, int64_t per, DtrainCudaError* err) noexcept;
  // sparse softmax cross-entropy per row (DtrainCudaXent); waits and writes
  // each row's loss to host memory.
  int32_t (*sparse_xent)(int32_t device, const DtrainCudaXent* args, DtrainCudaError* err) noexcept;
  // A float32 vector reduced to one host double (DtrainCudaReduceKind); waits.
  int32_t (*reduce)(int32_t device, int32_t kind, const float* x, int64_t n, double* host_out,
                    DtrainCudaError* err) noexcept;
  // One variable's optimizer update (DtrainCudaOptim), bit-identical to engine/optim.
  int32_t (*optimizer)(int32_t device, const DtrainCudaOptim* args, DtrainCudaError* err) noexcept;
  // The GPU's allocator statistics (no wait).
  int32_t (*mem_stats)(int32_t device, DtrainCudaMemStats* out, DtrainCudaError* err) noexcept;

  // ---- ABI 3: convolution and pooling through cuDNN (engine/cuda/cudnn_ops.hpp) ----
  // One convolution pass (DtrainCudaConv); workspace and scratch from the
  // caching allocator.
  int32_t (*conv2d)(int32_t device, const DtrainCudaConv* args, DtrainCudaError* err) noexcept;
  // Pooling forward or backward (DtrainCudaPool).
  int32_t (*pool2d)(int32_t device, const DtrainCudaPool* args, DtrainCudaError* err) noexcept;
};

// The one symbol the module exports (engine/cuda/module.map); its table is
// static and lives as long as the module.
const DtrainCudaModule* dtrain_cuda_module(void) noexcept;
using DtrainCudaModuleEntry = const DtrainCudaModule* (*)() noexcept;

}  // extern "C"

inline constexpr uint32_t kDtrainCudaModuleAbi = 3;
inline constexpr const char* kDtrainCudaModuleEntry = "dtrain_cuda_module";
inline constexpr const char* kDtrainCudaModuleFile = "libdtrain_cuda.so";

namespace dtrain {

// Copies `s` into a fixed-size text field of the table, cut to fit and NUL-terminated.
template <size_t N>
void copy_c_text(char (&dst)[N], std::string_view s) {
  const size_t n = s.size() < N - 1 ? s.size() : N - 1;
  s.copy(dst, n);
  dst[n] = '\0';
}

// ---- The loader (engine/cuda_module.cpp; host side, links no CUDA library) ----

// Whether this dtrain was built with CUDA (meson -Dcuda, toolkit found). A
// CPU-only build has no module, and load_cuda_module() always fails.
bool cuda_built();

struct CudaModule {
  const DtrainCudaModule* table = nullptr;  // never null in a loaded module
  std::string path;                         // the file it was loaded from
};

// The CUDA module, loaded on the first call: the first caller loads it (others
// wait), and every later call returns the same module or the same error. The
// module is never unloaded. Thread-safe. Errors (kRuntime), each naming the
// file: built without CUDA; no module found (listing where it looked); dlopen
// failed (with dlerror(), e.g. a CUDA library the module needs is missing); not
// a dtrain module; a module of another ABI version.
Result<const CudaModule*> load_cuda_module();

// A place to look for the module, and why it is looked for there.
struct CudaModuleCandidate {
  std::string path;
  std::string origin;  // "DTRAIN_CUDA_MODULE", "beside the executable", ...
};

// Where load_cuda_module looks, in order: only `env_value` when it is set and
// non-empty (DTRAIN_CUDA_MODULE: the user's choice, never second-guessed); else
// <dir of exe>/../lib/ (an installed bin/ + lib/ bundle), <dir of exe>/, then
// `build_path` (the module in the build tree). Empty `exe_path` or
// `build_path` leave their entries out. Pure: touches no file.
std::vector<CudaModuleCandidate> cuda_module_candidates(const char* env_value, std::string_view exe_path,
                                                        std::string_view build_path);

}  // namespace dtrain
