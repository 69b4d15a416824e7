// `dtrain devices`' report (engine/devices.hpp): each GPU's name, memory and
// compute capability, the library versions, and why no GPU is listed.
#include <doctest.h>

#include <string>

#include "engine/devices.hpp"

using namespace dtrain;

namespace {

DeviceReport host_only() {
  DeviceReport r;
  r.cpu_count = 2;
  r.host_memory = uint64_t{8} << 30;
  r.cpu_model = "AMD EPYC 9R14";
  r.onednn = "2.6.3, ISA avx2";
  r.cpu_isa = "avx2 (capped by DTRAIN_MAX_CPU_ISA=avx2; the CPU has avx512_bf16)";
  r.thread_budget = "budget 2: affinity 2 of 2 CPUs, no cgroup quota";
  return r;
}

constexpr const char* kHostLines =
    "cpu:0..cpu:1  2 logical CPUs, 8.0 GiB memory, AMD EPYC 9R14\n"
    "threads       budget 2: affinity 2 of 2 CPUs, no cgroup quota\n"
    "CPU kernels   ISA avx2 (capped by DTRAIN_MAX_CPU_ISA=avx2; the CPU has avx512_bf16)\n"
    "oneDNN        2.6.3, ISA avx2\n";

}  // namespace

TEST_CASE("devices report: every GPU's name, memory and compute capability, after the library versions") {
  DeviceReport r = host_only();
  r.gpu.cuda_built = true;
  r.gpu.cuda_module = "/opt/dtrain-bundle/lib/libdtrain_cuda.so";
  r.gpu.status = "ok";
  r.gpu.cuda_runtime = "13.0";
  r.gpu.cuda_driver = "13.0";
  r.gpu.cublas = "13.1.0";
  r.gpu.cudnn = "9.19.0";
  r.gpu.nccl = "2.28.9";
  r.gpu.gpus = {{0, "NVIDIA H100 80GB HBM3", uint64_t{85520809984}, 9, 0, 132},
                {1, "NVIDIA A100-SXM4-40GB", uint64_t{42298834944}, 8, 0, 108}};
  CHECK(format_device_report(r) ==
        std::string(kHostLines) +
            "CUDA module   /opt/dtrain-bundle/lib/libdtrain_cuda.so\n"
            "CUDA runtime  13.0\nCUDA driver   13.0\ncuBLAS        13.1.0\ncuDNN         9.19.0\nNCCL          2.28.9\n"
            "gpu:0         NVIDIA H100 80GB HBM3, 79.6 GiB, compute capability 9.0, 132 SMs\n"
            "gpu:1         NVIDIA A100-SXM4-40GB, 39.4 GiB, compute capability 8.0, 108 SMs\n");
}

TEST_CASE("devices report: without a GPU it says why none is listed") {
  DeviceReport r = host_only();
  r.gpu.cuda_built = true;
  r.gpu.cuda_module = "/b/engine/cuda/libdtrain_cuda.so";
  r.gpu.cuda_runtime = "13.0";
  r.gpu.cublas = "13.1.0";
  r.gpu.cudnn = "9.19.0";
  r.gpu.nccl = "2.28.9";
  r.gpu.status = "no usable GPU: cudaGetDeviceCount: CUDA driver version is insufficient for CUDA runtime version (35)";
  CHECK(format_device_report(r) ==
        std::string(kHostLines) +
            "CUDA module   /b/engine/cuda/libdtrain_cuda.so\n"
            "CUDA runtime  13.0\nCUDA driver   none\ncuBLAS        13.1.0\ncuDNN         9.19.0\nNCCL          2.28.9\n"
            "GPUs          none (no usable GPU: cudaGetDeviceCount: CUDA driver version is insufficient for CUDA "
            "runtime version (35))\n");

  DeviceReport cpu_build = host_only();
  cpu_build.gpu.status = "this dtrain was built without CUDA (meson -Dcuda=disabled or no CUDA toolkit found)";
  CHECK(format_device_report(cpu_build) ==
        std::string(kHostLines) + "CUDA          not built in\n"
                                  "GPUs          none (this dtrain was built without CUDA (meson -Dcuda=disabled or "
                                  "no CUDA toolkit found))\n");
}
