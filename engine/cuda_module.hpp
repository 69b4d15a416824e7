// The boundary between dtrain and its CUDA module. libdtrain_cuda.so holds every
// source that calls CUDA and links cudart, cuBLAS(Lt), cuDNN and NCCL; the dtrain
// executable links none of them and loads the module only when asked (a GPU job,
// `dtrain devices`), so a CPU run of a CUDA build maps no CUDA library. This one
// header is shared by both sides: the GPU backend interface the module
// implements, the one function it exports, and the loader.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/base/status.hpp"
#include "engine/kernels/conv.hpp"
#include "engine/kernels/matmul.hpp"
#include "engine/kernels/pool.hpp"
#include "engine/module_path.hpp"

// ---- Discovery's report (plain C layout) ----
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

}  // extern "C"

namespace dtrain {

// A GPU's caching allocator, as engine/cuda/caching_allocator.hpp counts it.
struct GpuMemoryStats {
  uint64_t allocated_bytes = 0, reserved_bytes = 0, peak_allocated_bytes = 0, peak_reserved_bytes = 0;
  uint64_t cuda_mallocs = 0, cuda_frees = 0;  // cudaMalloc / cudaFree calls so far
};

// How a float32 convolution may compute on a GPU: tf32 lets cuDNN use TF32
// tensor cores (precision.matmul: tf32); deterministic (run.deterministic)
// prefers the algorithms cuDNN marks deterministic (cudnn_ops.hpp's ConvPolicy).
struct GpuMath {
  bool tf32 = false;
  bool deterministic = false;
};

// Adam's per-step scalars (engine/cuda/update_math.hpp's AdamScalars).
struct GpuAdamStep {
  float lr_t, one_minus_b1, one_minus_b2, keep, eps;
};

// The GPU backend as the CUDA module implements it (ggml's
// ggml-backend-impl.h is the model: a backend says what it supports and
// computes it). Methods take the engine's own shape structs and raw pointers
// of GPU `device`'s memory (from allocate) unless named host, queue their work
// on the GPU's compute stream in call order, and return a Status whose error
// is one line naming the failed call, its place and the GPU; methods that hand
// a value back to the host wait for it. No exception crosses: the module
// catches its own. The module owns the object, which lives as long as the
// process; every method is thread-safe. Both sides come from one build (one
// compiler, one standard library), so C++ types cross the dlopen boundary.
class GpuBackend {
 public:
  // The CUDA, cuBLAS, cuDNN and NCCL versions and the GPUs this process can
  // use. Fills all of *out.
  virtual void discover_gpus(DtrainCudaReport& out) = 0;
  // Whether the backend has a GPU kernel for `op`, by the support table's
  // names (engine/ops/support.hpp: "matmul", "conv2d", "adam", ...).
  virtual bool supports(std::string_view op) const = 0;

  // ---- memory ----
  // `bytes` bytes from the GPU's caching allocator (no cudaMalloc once warm),
  // for use on its compute stream; null for 0 bytes.
  virtual Result<void*> allocate(int32_t device, uint64_t bytes) = 0;
  // Returns a block of allocate() to the cache (null is ignored).
  virtual void deallocate(int32_t device, void* p) = 0;
  // Copies bytes; a device of -1 is host memory (pageable). Ordered after the
  // compute stream's work and complete (host side readable) on return.
  virtual Status copy(int32_t dst_device, void* dst, int32_t src_device, const void* src, uint64_t bytes) = 0;
  // Sets n 4-byte words at p to `word`.
  virtual Status fill32(int32_t device, void* p, uint32_t word, int64_t n) = 0;
  // The GPU's allocator statistics (no wait).
  virtual Result<GpuMemoryStats> memory_stats(int32_t device) = 0;

  // ---- ops, float32 (a shape's element types must be f32) ----
  // c (m, n) = op(a) op(b) [+ bias (n)] [then relu], row-major, s.batch
  // products one after another (cuBLASLt). tf32: TF32 tensor cores.
  virtual Status matmul(int32_t device, const kernels::MatmulShape& s, const float* a, const float* b,
                        const float* bias, float* c, bool relu, bool tf32) = 0;
  // Convolution through cuDNN, shapes as kernels::conv2d_*: x (n, ih, iw, ic),
  // w (kh, kw, ic, oc) HWIO, bias and db (oc) or null, y and dy (n, oh, ow, oc).
  // Outputs are overwritten; forward applies relu when s.relu.
  virtual Status conv2d_forward(int32_t device, const kernels::Conv2dShape& s, const float* x, const float* w,
                                const float* bias, float* y, const GpuMath& math) = 0;
  virtual Status conv2d_backward_data(int32_t device, const kernels::Conv2dShape& s, const float* dy, const float* w,
                                      float* dx, const GpuMath& math) = 0;
  virtual Status conv2d_backward_weights(int32_t device, const kernels::Conv2dShape& s, const float* x,
                                         const float* dy, float* dw, float* db, const GpuMath& math) = 0;
  // The cuDNN algorithm each distinct convolution and direction ran with so
  // far in this process, one line each, in first-use order (cudnn_ops.hpp's
  // conv_algorithm_notes). No wait.
  virtual std::vector<std::string> conv_algorithms() = 0;
  // Pooling through cuDNN, x and dx (n, ih, iw, c), y and dy (n, oh, ow, c);
  // the backward reads x and y.
  virtual Status pool2d_forward(int32_t device, const kernels::Pool2dShape& s, const float* x, float* y) = 0;
  virtual Status pool2d_backward(int32_t device, const kernels::Pool2dShape& s, const float* x, const float* y,
                                 const float* dy, float* dx) = 0;
  // Elementwise over n floats (out may alias an input); the _grad ones take
  // the forward's output y and dy.
  virtual Status relu(int32_t device, const float* x, float* y, int64_t n) = 0;
  virtual Status relu_grad(int32_t device, const float* y, const float* dy, float* dx, int64_t n) = 0;
  virtual Status sigmoid(int32_t device, const float* x, float* y, int64_t n) = 0;
  virtual Status sigmoid_grad(int32_t device, const float* y, const float* dy, float* dx, int64_t n) = 0;
  virtual Status tanh(int32_t device, const float* x, float* y, int64_t n) = 0;
  virtual Status tanh_grad(int32_t device, const float* y, const float* dy, float* dx, int64_t n) = 0;
  virtual Status mul(int32_t device, const float* a, const float* b, float* out, int64_t n) = 0;
  virtual Status add_into(int32_t device, float* acc, const float* x, int64_t n) = 0;  // acc += x
  virtual Status scale(int32_t device, float* x, float s, int64_t n) = 0;              // x *= s
  // Rows of a (rows, cols) matrix; sum_rows' out is (cols), summed in row order.
  virtual Status softmax(int32_t device, const float* x, float* y, int64_t rows, int64_t cols) = 0;
  virtual Status softmax_grad(int32_t device, const float* y, const float* dy, float* dx, int64_t rows,
                              int64_t cols) = 0;
  virtual Status sum_rows(int32_t device, const float* x, float* out, int64_t rows, int64_t cols) = 0;
  // Inverted dropout (engine/cuda/dropout.hpp): x, mask, y (rows, per), row r
  // global example example_offset + r; the CPU kernel's masks bit for bit.
  virtual Status dropout(int32_t device, uint64_t key, int64_t example_offset, float rate, const float* x,
                         float* mask, float* y, int64_t rows, int64_t per) = 0;
  // Sparse softmax cross-entropy per row of logits (rows, classes), labels
  // (rows) as floats: host_row_losses (host, rows) := lse - logit[label], NaN
  // for a bad label; dlogits (or null) := row_scale (softmax - onehot). With
  // example weights (device, rows / positions; null: none) row r's loss and
  // gradient are multiplied by weights[r / positions]. Waits.
  virtual Status sparse_xent(int32_t device, const float* logits, const float* labels, float* dlogits,
                             float row_scale, double* host_row_losses, int64_t rows, int64_t classes,
                             const float* weights, int64_t positions) = 0;
  // The sum of x^2 in double; the number of non-finite elements. Wait.
  virtual Result<double> sum_squares(int32_t device, const float* x, int64_t n) = 0;
  virtual Result<int64_t> count_nonfinite(int32_t device, const float* x, int64_t n) = 0;
  // One variable's update, bit-identical to engine/optim's sgd and adam
  // (engine/cuda/update_math.hpp); slot pointers null where unused.
  virtual Status sgd(int32_t device, float* var, const float* grad, float* velocity, int64_t n, float lr,
                     float momentum, bool nesterov) = 0;
  virtual Status adam(int32_t device, float* var, const float* grad, float* m, float* v, int64_t n,
                      const GpuAdamStep& k) = 0;

 protected:
  ~GpuBackend() = default;  // owned by the module, never deleted through this interface
};

}  // namespace dtrain

extern "C" {

// What the one exported function returns. Its first two fields keep their
// place in every version, so that the loader can refuse a module of another
// version before it touches anything else of it. The loader accepts only its
// own version: the executable and the module come from one build, so another
// version means a stale or foreign file, and the loader says so instead of
// calling into it. Bump kDtrainCudaModuleAbi on any change to GpuBackend or
// to this struct.
struct DtrainCudaModule {
  uint32_t abi_version;         // kDtrainCudaModuleAbi of the module's build
  uint32_t table_size;          // sizeof(DtrainCudaModule) of the module's build
  dtrain::GpuBackend* backend;  // never null; lives as long as the module
};

// The one symbol the module exports (engine/cuda/module.map); what it returns
// is static and lives as long as the module.
const DtrainCudaModule* dtrain_cuda_module(void) noexcept;
using DtrainCudaModuleEntry = const DtrainCudaModule* (*)() noexcept;

}  // extern "C"

inline constexpr uint32_t kDtrainCudaModuleAbi = 6;
inline constexpr const char* kDtrainCudaModuleEntry = "dtrain_cuda_module";
inline constexpr const char* kDtrainCudaModuleFile = "libdtrain_cuda.so";

namespace dtrain {

// Copies `s` into a fixed-size text field of DtrainCudaReport, cut to fit and NUL-terminated.
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
  GpuBackend* backend = nullptr;            // table->backend: never null in a loaded module
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
using CudaModuleCandidate = ModuleCandidate;

// Where load_cuda_module looks (engine/module_path.hpp's module_candidates of
// libdtrain_cuda.so, `env_value` being DTRAIN_CUDA_MODULE's): only
// `env_value` when it is set and non-empty; else <dir of exe>/../lib/ (an
// installed bin/ + lib/ bundle), <dir of exe>/, then `build_path` (the module
// in the build tree). Pure: touches no file.
std::vector<CudaModuleCandidate> cuda_module_candidates(const char* env_value, std::string_view exe_path,
                                                        std::string_view build_path);

}  // namespace dtrain
