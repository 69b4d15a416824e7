// Host half of device discovery and the `dtrain devices` report.
#include "engine/devices.hpp"

#include "engine/cpu_isa.hpp"
#include <fmt/format.h>
#include <unistd.h>

#include <fstream>
#include <memory>
#include <oneapi/dnnl/dnnl.hpp>
#include <thread>

#include "engine/cpu_isa.hpp"
#include "engine/cuda_module.hpp"
#include "engine/threads.hpp"

namespace dtrain {

GpuReport discover_gpus() {
  GpuReport r;
  r.cuda_built = cuda_built();
  if (!r.cuda_built) {
    r.status = "this dtrain was built without CUDA (meson -Dcuda=disabled or no CUDA toolkit found)";
    return r;
  }
  const Result<const CudaModule*> module = load_cuda_module();
  if (!module.ok()) {
    r.status = "CUDA module not loaded: " + module.error().message;
    return r;
  }
  r.cuda_module = (*module)->path;
  const auto c = std::make_unique<DtrainCudaReport>();  // about 20 KiB
  (*module)->backend->discover_gpus(*c);
  r.status = c->status;
  r.cuda_runtime = c->cuda_runtime;
  r.cuda_driver = c->cuda_driver;
  r.cublas = c->cublas;
  r.cudnn = c->cudnn;
  r.nccl = c->nccl;
  for (int32_t i = 0; i < c->gpu_count && i < kDtrainCudaMaxGpus; ++i) {
    const DtrainCudaGpu& g = c->gpus[i];
    r.gpus.push_back({g.index, g.name, g.total_memory, g.cc_major, g.cc_minor, g.multiprocessors});
  }
  return r;
}

DeviceReport discover_devices() {
  DeviceReport r;
  r.cpu_count = static_cast<int>(std::thread::hardware_concurrency());
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  if (pages > 0 && page > 0) r.host_memory = static_cast<uint64_t>(pages) * static_cast<uint64_t>(page);
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind("model name", 0) == 0) {
      r.cpu_model = line.substr(line.find(':') + 2);
      break;
    }
  }
  const dnnl_version_t* v = dnnl_version();
  r.onednn = fmt::format("{}.{}.{}, ISA {}", v->major, v->minor, v->patch, onednn_isa_name());
  r.cpu_isa = describe_cpu_isa();
  r.thread_budget = detect_thread_budget().describe();
  r.gpu = discover_gpus();
  return r;
}

std::string format_device_report(const DeviceReport& r) {
  constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
  std::string out;
  out += fmt::format("cpu:0..cpu:{}  {} logical CPUs, {:.1f} GiB memory{}\n", r.cpu_count - 1, r.cpu_count,
                     static_cast<double>(r.host_memory) / kGiB, r.cpu_model.empty() ? "" : ", " + r.cpu_model);
  if (!r.thread_budget.empty()) out += fmt::format("threads       {}\n", r.thread_budget);
  out += fmt::format("CPU kernels   ISA {}\n", r.cpu_isa);
  out += fmt::format("oneDNN        {}\n", r.onednn);
  if (!r.gpu.cuda_built) {
    out += "CUDA          not built in\n";
  } else if (!r.gpu.cuda_module.empty()) {
    out += fmt::format("CUDA module   {}\n", r.gpu.cuda_module);
    auto or_unknown = [](const std::string& s) { return s.empty() ? std::string("unknown") : s; };
    out += fmt::format("CUDA runtime  {}\nCUDA driver   {}\ncuBLAS        {}\ncuDNN         {}\nNCCL          {}\n",
                       or_unknown(r.gpu.cuda_runtime), r.gpu.cuda_driver.empty() ? "none" : r.gpu.cuda_driver,
                       or_unknown(r.gpu.cublas), or_unknown(r.gpu.cudnn), or_unknown(r.gpu.nccl));
  }
  for (const GpuInfo& g : r.gpu.gpus) {
    out += fmt::format("gpu:{}         {}, {:.1f} GiB, compute capability {}.{}, {} SMs\n", g.index, g.name,
                       static_cast<double>(g.total_memory) / kGiB, g.cc_major, g.cc_minor, g.multiprocessors);
  }
  if (r.gpu.gpus.empty()) out += "GPUs          none (" + r.gpu.status + ")\n";
  return out;
}

}  // namespace dtrain
