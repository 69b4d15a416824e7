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

#include "engine/status.hpp"

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
  // Next, with the CUDA compute backend: the caching allocator (allocate,
  // free, empty_cache, statistics), streams and events, host<->device copies
  // and the ops (gemm, convolution, pooling, elementwise, fused optimizer
  // updates), each an entry of this table taking plain pointers and shapes.
};

// The one symbol the module exports (engine/cuda/module.map); its table is
// static and lives as long as the module.
const DtrainCudaModule* dtrain_cuda_module(void) noexcept;
using DtrainCudaModuleEntry = const DtrainCudaModule* (*)() noexcept;

}  // extern "C"

inline constexpr uint32_t kDtrainCudaModuleAbi = 1;
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
