// What this machine offers: CPUs, memory, GPUs and the CUDA/cuDNN/NCCL
// versions, as printed by `dtrain devices`. The GPU half comes from the CUDA
// module (engine/cuda_module.hpp), loaded by discover_gpus() on first use.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dtrain {

struct GpuInfo {
  int index = 0;
  std::string name;
  uint64_t total_memory = 0;
  int cc_major = 0, cc_minor = 0;
  int multiprocessors = 0;
};

struct GpuReport {
  bool cuda_built = false;      // this binary was built with CUDA
  std::string cuda_module;      // the CUDA module's file; "" when not loaded
  std::string status;           // why there are no GPUs, or "ok"
  std::vector<GpuInfo> gpus;
  std::string cuda_runtime, cuda_driver, cublas, cudnn, nccl;  // versions, "" when unknown
};

struct DeviceReport {
  int cpu_count = 0;
  uint64_t host_memory = 0;
  std::string cpu_model;
  std::string onednn;   // version and the ISA it dispatches to: "2.6.3, ISA avx2"
  std::string cpu_isa;  // dtrain's own kernels (engine/cpu_isa.hpp): "avx2 (capped by ...)"
  std::string thread_budget;  // this process's (engine/threads.hpp), e.g. "budget 2: affinity 2 of 16 CPUs, ..."
  GpuReport gpu;
};

// Loads the CUDA module if needed (cuda_module.hpp): never fails; when the
// module cannot be loaded, status says which file and why.
GpuReport discover_gpus();
DeviceReport discover_devices();
std::string format_device_report(const DeviceReport& r);

}  // namespace dtrain
