// The cuda backend's host side (gpu_ops.hpp): each op calls the CUDA
// module's GpuBackend with the engine's own shapes and raw pointers, and
// throws on its failure.
#include "engine/backend/cuda/gpu_ops.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace dtrain::gpu {

namespace {

GpuBackend& backend() {
  Result<const CudaModule*> m = load_cuda_module();
  if (!m.ok()) {
    std::fprintf(stderr, "dtrain: internal error: a GPU op was requested, but the CUDA module is not usable: %s\n",
                 m.error().message.c_str());
    std::abort();
  }
  return *(*m)->backend;
}

// Throws for a failed backend call, naming the op and the device.
void check(const char* op, const Device& d, const Status& s) {
  if (!s.ok()) throw std::runtime_error(fmt::format("{} on {} failed: {}", op, d.str(), s.error().message));
}

template <class T>
T value(const char* op, const Device& d, Result<T> r) {
  if (!r.ok()) check(op, d, r.error());
  return *r;
}

class CudaMemory final : public DeviceMemory {
 public:
  void* allocate(const Device& d, size_t bytes) override {
    return value("allocation", d, backend().allocate(d.index, std::max<size_t>(bytes, 1)));
  }
  void deallocate(const Device& d, void* p, size_t) override { backend().deallocate(d.index, p); }
  void copy(const Device& dst_dev, void* dst, const Device& src_dev, const void* src, size_t bytes) override {
    count_copy(dst_dev, src_dev);
    const int32_t to = dst_dev.kind == DeviceKind::cuda ? dst_dev.index : -1;
    const int32_t from = src_dev.kind == DeviceKind::cuda ? src_dev.index : -1;
    check("copy", to >= 0 ? dst_dev : src_dev, backend().copy(to, dst, from, src, bytes));
  }
  void fill32(const Device& d, void* p, uint32_t word, int64_t n) override {
    check("fill", d, backend().fill32(d.index, p, word, n));
  }
};

}  // namespace

Status check_device(const Device& d) {
  Result<const CudaModule*> m = load_cuda_module();
  if (!m.ok()) return runtime_error(m.error().message);
  DtrainCudaReport report{};
  (*m)->backend->discover_gpus(report);
  if (report.gpu_count == 0) return runtime_error(report.status);
  if (d.index >= report.gpu_count) {
    return runtime_error(fmt::format("this machine has {} GPU{} (gpu:0{})", report.gpu_count,
                                     report.gpu_count == 1 ? "" : "s",
                                     report.gpu_count == 1 ? "" : fmt::format("..gpu:{}", report.gpu_count - 1)));
  }
  return Status::Ok();
}

DeviceMemory& cuda_memory() {
  static CudaMemory memory;
  return memory;
}

MemoryStats memory_stats(const Device& d) { return value("memory statistics", d, backend().memory_stats(d.index)); }

void matmul(const Device& d, const kernels::MatmulShape& s, const float* a, const float* b, const float* bias,
            float* c, bool relu, bool tf32) {
  check("matmul", d, backend().matmul(d.index, s, a, b, bias, c, relu, tf32));
}

void conv2d_forward(const Device& d, const kernels::Conv2dShape& s, const float* x, const float* w, const float* bias,
                    float* y, const GpuMath& math) {
  check("conv2d", d, backend().conv2d_forward(d.index, s, x, w, bias, y, math));
}
void conv2d_backward_data(const Device& d, const kernels::Conv2dShape& s, const float* dy, const float* w, float* dx,
                          const GpuMath& math) {
  check("conv2d backward data", d, backend().conv2d_backward_data(d.index, s, dy, w, dx, math));
}
void conv2d_backward_weights(const Device& d, const kernels::Conv2dShape& s, const float* x, const float* dy,
                             float* dw, float* db, const GpuMath& math) {
  check("conv2d backward weights", d, backend().conv2d_backward_weights(d.index, s, x, dy, dw, db, math));
}
std::vector<std::string> conv_algorithms() {
  Result<const CudaModule*> m = load_cuda_module();
  if (!m.ok()) return {};
  return (*m)->backend->conv_algorithms();
}

void pool2d_forward(const Device& d, const kernels::Pool2dShape& s, const float* x, float* y) {
  check("pool2d", d, backend().pool2d_forward(d.index, s, x, y));
}
void pool2d_backward(const Device& d, const kernels::Pool2dShape& s, const float* x, const float* y, const float* dy,
                     float* dx) {
  check("pool2d backward", d, backend().pool2d_backward(d.index, s, x, y, dy, dx));
}

void relu(const Device& d, const float* x, float* y, int64_t n) { check("relu", d, backend().relu(d.index, x, y, n)); }
void relu_grad(const Device& d, const float* y, const float* dy, float* dx, int64_t n) {
  check("relu gradient", d, backend().relu_grad(d.index, y, dy, dx, n));
}
void sigmoid(const Device& d, const float* x, float* y, int64_t n) {
  check("sigmoid", d, backend().sigmoid(d.index, x, y, n));
}
void sigmoid_grad(const Device& d, const float* y, const float* dy, float* dx, int64_t n) {
  check("sigmoid gradient", d, backend().sigmoid_grad(d.index, y, dy, dx, n));
}
void tanh(const Device& d, const float* x, float* y, int64_t n) { check("tanh", d, backend().tanh(d.index, x, y, n)); }
void tanh_grad(const Device& d, const float* y, const float* dy, float* dx, int64_t n) {
  check("tanh gradient", d, backend().tanh_grad(d.index, y, dy, dx, n));
}
void mul(const Device& d, const float* a, const float* b, float* out, int64_t n) {
  check("mul", d, backend().mul(d.index, a, b, out, n));
}
void add_into(const Device& d, float* acc, const float* x, int64_t n) {
  check("add_into", d, backend().add_into(d.index, acc, x, n));
}
void scale(const Device& d, float* x, float s, int64_t n) { check("scale", d, backend().scale(d.index, x, s, n)); }

void softmax(const Device& d, const float* x, float* y, int64_t rows, int64_t cols) {
  check("softmax", d, backend().softmax(d.index, x, y, rows, cols));
}
void softmax_grad(const Device& d, const float* y, const float* dy, float* dx, int64_t rows, int64_t cols) {
  check("softmax gradient", d, backend().softmax_grad(d.index, y, dy, dx, rows, cols));
}
void sum_rows(const Device& d, const float* x, float* out, int64_t rows, int64_t cols) {
  check("sum_rows", d, backend().sum_rows(d.index, x, out, rows, cols));
}

void dropout(const Device& d, uint64_t key, int64_t example_offset, float rate, const float* x, float* mask, float* y,
             int64_t rows, int64_t per) {
  check("dropout", d, backend().dropout(d.index, key, example_offset, rate, x, mask, y, rows, per));
}

void sparse_xent(const Device& d, const float* logits, const float* labels, float* dlogits, float row_scale,
                 double* row_losses, int64_t rows, int64_t classes, const float* weights, int64_t positions) {
  check("sparse_softmax_cross_entropy", d,
        backend().sparse_xent(d.index, logits, labels, dlogits, row_scale, row_losses, rows, classes, weights,
                              positions));
}

double sum_squares(const Device& d, const float* x, int64_t n) {
  return value("sum_squares", d, backend().sum_squares(d.index, x, n));
}
int64_t count_nonfinite(const Device& d, const float* x, int64_t n) {
  return value("all_finite", d, backend().count_nonfinite(d.index, x, n));
}

void sgd(const Device& d, float* var, const float* grad, float* velocity, int64_t n, float lr, float momentum,
         bool nesterov) {
  check("sgd", d, backend().sgd(d.index, var, grad, velocity, n, lr, momentum, nesterov));
}
void adam(const Device& d, float* var, const float* grad, float* m, float* v, int64_t n, const AdamStep& k) {
  check("adam", d, backend().adam(d.index, var, grad, m, v, n, k));
}

}  // namespace dtrain::gpu
