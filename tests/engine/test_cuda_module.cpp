// The CUDA module's loader: where it looks and in which order, the text it
// copies into discovery's fixed fields, and (CUDA builds) that the module in the
// build tree loads, reports and offers the GpuBackend whose ops the support
// table runs on cuda; a CPU-only build reports CUDA as not built in.
#include <doctest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "engine/cuda_module.hpp"
#include "engine/ops/support.hpp"

using namespace dtrain;

namespace {

std::vector<std::string> paths(const std::vector<CudaModuleCandidate>& cs) {
  std::vector<std::string> out;
  for (const CudaModuleCandidate& c : cs) out.push_back(c.path);
  return out;
}

}  // namespace

TEST_CASE("cuda module: search order") {
  using P = std::vector<std::string>;
  CHECK(paths(cuda_module_candidates(nullptr, "/opt/dtrain/bin/dtrain", "/src/build/engine/cuda/libdtrain_cuda.so")) ==
        P{"/opt/dtrain/lib/libdtrain_cuda.so", "/opt/dtrain/bin/libdtrain_cuda.so",
          "/src/build/engine/cuda/libdtrain_cuda.so"});
  CHECK(paths(cuda_module_candidates("", "/opt/dtrain/bin/dtrain", "")) ==
        P{"/opt/dtrain/lib/libdtrain_cuda.so", "/opt/dtrain/bin/libdtrain_cuda.so"});
  CHECK(paths(cuda_module_candidates(nullptr, "", "/b/libdtrain_cuda.so")) == P{"/b/libdtrain_cuda.so"});
  // DTRAIN_CUDA_MODULE is the only place looked at when set.
  const auto env = cuda_module_candidates("/x/my_cuda.so", "/opt/dtrain/bin/dtrain", "/b/libdtrain_cuda.so");
  REQUIRE(env.size() == 1);
  CHECK(env[0].path == "/x/my_cuda.so");
  CHECK(env[0].origin == "DTRAIN_CUDA_MODULE");
}

TEST_CASE("cuda module: text fields are cut to fit and terminated") {
  char field[6] = {'x', 'x', 'x', 'x', 'x', 'x'};
  copy_c_text(field, "13.0");
  CHECK(std::string(field) == "13.0");
  copy_c_text(field, "2.28.9-long");
  CHECK(std::string(field) == "2.28.");
  copy_c_text(field, "");
  CHECK(std::string(field).empty());
}

TEST_CASE("cuda module: loads from the build tree in a CUDA build, else says not built in") {
  if (const char* env = std::getenv("DTRAIN_CUDA_MODULE"); env && *env) {
    MESSAGE("DTRAIN_CUDA_MODULE is set: not checking the build tree's module");
    return;
  }
  const Result<const CudaModule*> m = load_cuda_module();
  if (!cuda_built()) {
    REQUIRE_FALSE(m.ok());
    CHECK(m.error().message == "CUDA not built in (meson -Dcuda=disabled or no CUDA toolkit found)");
    return;
  }
  REQUIRE_MESSAGE(m.ok(), (m.ok() ? "" : m.error().message));
  CHECK(load_cuda_module().value() == m.value());  // loaded once
  REQUIRE((*m)->table != nullptr);
  CHECK((*m)->table->abi_version == kDtrainCudaModuleAbi);
  CHECK((*m)->table->table_size == sizeof(DtrainCudaModule));
  REQUIRE((*m)->backend != nullptr);
  CHECK((*m)->backend == (*m)->table->backend);
  GpuBackend& b = *(*m)->backend;
  DtrainCudaReport r{};
  b.discover_gpus(r);
  CHECK(std::string(r.cuda_runtime).find('.') != std::string::npos);
  CHECK(std::string(r.status).size() > 0);
  CHECK((r.gpu_count > 0) == (std::string(r.status) == "ok"));
  // The backend has a GPU kernel for exactly the ops the support table runs on cuda.
  const ops::Context gpu0{Device{DeviceKind::cuda, 0}, DType::f32};
  for (const char* op : {"matmul", "conv2d", "conv2d_dilated", "pool2d", "pool2d_pad_after", "activation", "gelu", "batch_norm",
                         "layer_norm", "global_pool", "embedding", "position_embedding", "dropout", "merge", "pad",
                         "attention", "sum_rows", "mul", "reduce", "sparse_softmax_cross_entropy",
                         "softmax_cross_entropy", "sigmoid_cross_entropy", "mean_squared_error", "sgd", "adam",
                         "adamw", "rmsprop", "adagrad"}) {
    CHECK_MESSAGE(b.supports(op) == ops::supports(op, gpu0), op);
  }
  // Without a GPU an op fails with the reason instead of crashing.
  if (r.gpu_count == 0) {
    const Result<void*> p = b.allocate(0, 64);
    REQUIRE_FALSE(p.ok());
    CHECK(p.error().message.find("gpu:0 does not exist: this machine has 0 usable GPUs") == 0);
    const Status conv = b.conv2d_forward(0, kernels::Conv2dShape{}, nullptr, nullptr, nullptr, nullptr, GpuMath{});
    REQUIRE_FALSE(conv.ok());
    CHECK(conv.error().message.find("gpu:0 does not exist: this machine has 0 usable GPUs") == 0);
  }
}
