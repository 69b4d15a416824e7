// The CUDA module's GpuBackend (cuda_backend.hpp): each method resolves its
// GPU, runs the engine/cuda function on the compute stream with the engine's
// own shape structs, and turns an exception into its Status.
#include "engine/cuda/cuda_backend.hpp"

#include <fmt/format.h>

#include <array>
#include <cstdio>
#include <exception>
#include <initializer_list>
#include <string_view>
#include <vector>

#include "engine/cuda/backend_kernels.hpp"
#include "engine/cuda/check.hpp"
#include "engine/cuda/cudnn_ops.hpp"
#include "engine/cuda/device_context.hpp"
#include "engine/cuda/discover.hpp"
#include "engine/cuda/dropout.hpp"
#include "engine/cuda/eltwise.hpp"
#include "engine/cuda/fused_optim.hpp"
#include "engine/cuda/matmul_lt.hpp"

namespace dtrain::cuda {

namespace {

// Runs body(dev) with GPU `device` current; any failure becomes the Status.
template <class F>
Status run(int32_t device, F&& body) noexcept {
  try {
    Result<GpuDevice*> dev = gpu_device(device);
    if (!dev.ok()) return dev.error();
    Result<DeviceGuard> guard = DeviceGuard::set(device);
    if (!guard.ok()) return guard.error();
    return body(**dev);
  } catch (const std::exception& e) {
    return runtime_error(fmt::format("gpu:{}: {}", device, e.what()));
  } catch (...) {
    return runtime_error(fmt::format("gpu:{}: unknown exception", device));
  }
}

// run() for a method that hands back a value.
template <class T, class F>
Result<T> run_value(int32_t device, F&& body) noexcept {
  T out{};
  Status s = run(device, [&](GpuDevice& dev) { return body(dev, out); });
  if (!s.ok()) return s.error();
  return out;
}

cudaStream_t stream(GpuDevice& dev) { return dev.compute.get(); }

MathMode math(bool tf32) { return tf32 ? MathMode::kTf32 : MathMode::kFloat32; }
ConvPolicy policy(const GpuMath& m) { return ConvPolicy{math(m.tf32), m.deterministic}; }

// The kernels of this backend run float32 only (the support table's cuda rows).
Status f32_only(int32_t device, const char* op, std::initializer_list<kernels::KType> types) {
  for (kernels::KType t : types) {
    if (t != kernels::KType::kF32) {
      return runtime_error(fmt::format("gpu:{}: {} with {} operands: the GPU backend runs float32 only", device, op,
                                       kernels::ktype_name(t)));
    }
  }
  return {};
}

// Copies `count` doubles from the GPU's memory to the host after the compute
// stream's work, and waits.
Status read_back(GpuDevice& dev, const double* src, double* host, size_t count) {
  DTRAIN_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(host, src, count * sizeof(double), cudaMemcpyDeviceToHost, stream(dev)));
  return dev.compute.synchronize();
}

// The reduction over x: partial sums per block, added on the host in index
// order (deterministic).
Result<double> reduce(int32_t device, bool nonfinite, const float* x, int64_t n) {
  return run_value<double>(device, [&](GpuDevice& dev, double& total) -> Status {
    Result<CachedBuffer> partials =
        dev.allocator.allocate_buffer(kReduceBlocks * sizeof(double), stream_id(dev.compute));
    if (!partials.ok()) return partials.error();
    auto* d = static_cast<double*>(partials->get());
    if (Status s = reduce_partials(nonfinite, x, n, d, stream(dev)); !s.ok()) return s;
    std::vector<double> host(kReduceBlocks);
    if (Status s = read_back(dev, d, host.data(), host.size()); !s.ok()) return s;
    for (double v : host) total += v;
    return {};
  });
}

// The ops with a GPU kernel here, by the support table's names: the table's
// cuda rows (engine/ops/support.cpp; tests/engine/test_cuda_module.cpp checks
// that they agree).
constexpr std::array<std::string_view, 12> kSupported{
    "matmul", "conv2d", "pool2d", "activation", "dropout", "sum_rows",
    "mul",    "reduce", "sparse_softmax_cross_entropy", "sgd", "adam", "adamw",
};

class CudaBackend final : public GpuBackend {
 public:
  void discover_gpus(DtrainCudaReport& out) override {
    try {
      cuda::discover_gpus(out);
    } catch (const std::exception& e) {
      out = DtrainCudaReport{};
      std::snprintf(out.status, sizeof(out.status), "GPU discovery failed: %s", e.what());  // allocates nothing
    } catch (...) {
      out = DtrainCudaReport{};
      copy_c_text(out.status, "GPU discovery failed: unknown exception");
    }
  }

  bool supports(std::string_view op) const override {
    for (std::string_view s : kSupported) {
      if (s == op) return true;
    }
    return false;
  }

  Result<void*> allocate(int32_t device, uint64_t bytes) override {
    return run_value<void*>(device, [&](GpuDevice& dev, void*& out) -> Status {
      Result<void*> p = dev.allocator.allocate(bytes, stream_id(dev.compute));
      if (!p.ok()) return p.error();
      out = *p;
      return {};
    });
  }

  void deallocate(int32_t device, void* p) override {
    if (p == nullptr) return;
    // Every use of the block was queued on the compute stream: the block's
    // next user on that stream runs after them (caching_allocator.hpp).
    (void)run(device, [&](GpuDevice& dev) -> Status {
      dev.allocator.free(p);
      return {};
    });
  }

  Status copy(int32_t dst_device, void* dst, int32_t src_device, const void* src, uint64_t bytes) override {
    if (bytes == 0) return {};
    const int32_t on = src_device >= 0 ? src_device : dst_device;
    return run(on, [&](GpuDevice& dev) -> Status {
      if (dst_device >= 0 && dst_device != on) {
        // Another GPU's destination: its earlier work first.
        Result<GpuDevice*> other = gpu_device(dst_device);
        if (!other.ok()) return other.error();
        if (Status s = (*other)->compute.synchronize(); !s.ok()) return s;
      }
      DTRAIN_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream(dev)));
      return dev.compute.synchronize();
    });
  }

  Status fill32(int32_t device, void* p, uint32_t word, int64_t n) override {
    return run(device, [&](GpuDevice& dev) { return cuda::fill32(p, word, n, stream(dev)); });
  }

  Result<GpuMemoryStats> memory_stats(int32_t device) override {
    return run_value<GpuMemoryStats>(device, [&](GpuDevice& dev, GpuMemoryStats& out) -> Status {
      const AllocatorStats s = dev.allocator.stats();
      out = GpuMemoryStats{s.allocated_bytes,     s.reserved_bytes,      s.peak_allocated_bytes,
                           s.peak_reserved_bytes, s.backend_allocations, s.backend_frees};
      return {};
    });
  }

  Status matmul(int32_t device, const kernels::MatmulShape& s, const float* a, const float* b, const float* bias,
                float* c, bool relu, bool tf32) override {
    return run(device, [&](GpuDevice& dev) -> Status {
      if (Status st = f32_only(device, "matmul", {s.a_type, s.b_type, s.c_type}); !st.ok()) return st;
      if (s.m == 0 || s.n == 0) return {};
      if (s.k == 0) return runtime_error(fmt::format("gpu:{}: matmul with an empty inner dimension (k = 0)", device));
      const Epilogue e = bias != nullptr ? (relu ? Epilogue::kBiasRelu : Epilogue::kBias)
                                         : (relu ? Epilogue::kRelu : Epilogue::kNone);
      return cuda::matmul(dev, s, a, b, bias, c, e, math(tf32));
    });
  }

  Status conv2d_forward(int32_t device, const kernels::Conv2dShape& s, const float* x, const float* w,
                        const float* bias, float* y, const GpuMath& m) override {
    return run(device, [&](GpuDevice& dev) -> Status {
      if (Status st = f32_only(device, "conv2d", {s.x_type, s.w_type, s.y_type}); !st.ok()) return st;
      if (s.n == 0) return {};
      return cuda::conv2d_forward(dev, s, x, w, bias, y, policy(m));
    });
  }

  Status conv2d_backward_data(int32_t device, const kernels::Conv2dShape& s, const float* dy, const float* w,
                              float* dx, const GpuMath& m) override {
    return run(device, [&](GpuDevice& dev) -> Status {
      if (Status st = f32_only(device, "conv2d backward data", {s.dy_type, s.w_type, s.dx_type}); !st.ok()) return st;
      if (s.n == 0) return {};
      return cuda::conv2d_backward_data(dev, s, dy, w, dx, policy(m));
    });
  }

  Status conv2d_backward_weights(int32_t device, const kernels::Conv2dShape& s, const float* x, const float* dy,
                                 float* dw, float* db, const GpuMath& m) override {
    return run(device, [&](GpuDevice& dev) -> Status {
      if (Status st = f32_only(device, "conv2d backward weights", {s.x_type, s.dy_type}); !st.ok()) return st;
      if (s.n == 0) return {};
      return cuda::conv2d_backward_weights(dev, s, x, dy, dw, db, policy(m));
    });
  }

  std::vector<std::string> conv_algorithms() override { return conv_algorithm_notes(); }

  Status pool2d_forward(int32_t device, const kernels::Pool2dShape& s, const float* x, float* y) override {
    return run(device, [&](GpuDevice& dev) -> Status {
      if (Status st = f32_only(device, "pool2d", {s.type}); !st.ok()) return st;
      if (s.n == 0) return {};
      return cuda::pool2d_forward(dev, s, x, y);
    });
  }

  Status pool2d_backward(int32_t device, const kernels::Pool2dShape& s, const float* x, const float* y,
                         const float* dy, float* dx) override {
    return run(device, [&](GpuDevice& dev) -> Status {
      if (Status st = f32_only(device, "pool2d backward", {s.type}); !st.ok()) return st;
      if (s.n == 0) return {};
      return cuda::pool2d_backward(dev, s, x, y, dy, dx);
    });
  }

  Status relu(int32_t device, const float* x, float* y, int64_t n) override {
    return run(device, [&](GpuDevice& dev) { return relu_forward(x, y, n, stream(dev)); });
  }
  Status relu_grad(int32_t device, const float* y, const float* dy, float* dx, int64_t n) override {
    return run(device, [&](GpuDevice& dev) { return relu_backward(y, dy, dx, n, stream(dev)); });
  }
  Status sigmoid(int32_t device, const float* x, float* y, int64_t n) override {
    return run(device, [&](GpuDevice& dev) { return sigmoid_forward(x, y, n, stream(dev)); });
  }
  Status sigmoid_grad(int32_t device, const float* y, const float* dy, float* dx, int64_t n) override {
    return run(device, [&](GpuDevice& dev) { return sigmoid_backward(y, dy, dx, n, stream(dev)); });
  }
  Status tanh(int32_t device, const float* x, float* y, int64_t n) override {
    return run(device, [&](GpuDevice& dev) { return tanh_forward(x, y, n, stream(dev)); });
  }
  Status tanh_grad(int32_t device, const float* y, const float* dy, float* dx, int64_t n) override {
    return run(device, [&](GpuDevice& dev) { return tanh_backward(y, dy, dx, n, stream(dev)); });
  }
  Status mul(int32_t device, const float* a, const float* b, float* out, int64_t n) override {
    return run(device, [&](GpuDevice& dev) { return cuda::mul(a, b, out, n, stream(dev)); });
  }
  Status add_into(int32_t device, float* acc, const float* x, int64_t n) override {
    return run(device, [&](GpuDevice& dev) { return axpy(1.0f, x, acc, n, stream(dev)); });
  }
  Status scale(int32_t device, float* x, float s, int64_t n) override {
    return run(device, [&](GpuDevice& dev) { return cuda::scale(s, x, x, n, stream(dev)); });
  }

  Status softmax(int32_t device, const float* x, float* y, int64_t rows, int64_t cols) override {
    return run(device, [&](GpuDevice& dev) { return softmax_rows(x, y, rows, cols, stream(dev)); });
  }
  Status softmax_grad(int32_t device, const float* y, const float* dy, float* dx, int64_t rows,
                      int64_t cols) override {
    return run(device, [&](GpuDevice& dev) { return softmax_backward_rows(y, dy, dx, rows, cols, stream(dev)); });
  }
  Status sum_rows(int32_t device, const float* x, float* out, int64_t rows, int64_t cols) override {
    return run(device, [&](GpuDevice& dev) { return cuda::sum_rows(x, out, rows, cols, stream(dev)); });
  }

  Status dropout(int32_t device, uint64_t key, int64_t example_offset, float rate, const float* x, float* mask,
                 float* y, int64_t rows, int64_t per) override {
    return run(device, [&](GpuDevice& dev) {
      return dropout_forward(key, example_offset, rate, x, mask, y, rows, per, stream(dev));
    });
  }

  Status sparse_xent(int32_t device, const float* logits, const float* labels, float* dlogits, float row_scale,
                     double* host_row_losses, int64_t rows, int64_t classes, const float* weights,
                     int64_t positions) override {
    return run(device, [&](GpuDevice& dev) -> Status {
      if (rows <= 0) return {};
      Result<CachedBuffer> losses =
          dev.allocator.allocate_buffer(static_cast<size_t>(rows) * sizeof(double), stream_id(dev.compute));
      if (!losses.ok()) return losses.error();
      auto* d = static_cast<double*>(losses->get());
      if (Status s = sparse_xent_rows(logits, labels, dlogits, row_scale, d, rows, classes, weights, positions,
                                      stream(dev)); !s.ok()) {
        return s;
      }
      return read_back(dev, d, host_row_losses, static_cast<size_t>(rows));
    });
  }

  Result<double> sum_squares(int32_t device, const float* x, int64_t n) override {
    return reduce(device, false, x, n);
  }
  Result<int64_t> count_nonfinite(int32_t device, const float* x, int64_t n) override {
    Result<double> count = reduce(device, true, x, n);
    if (!count.ok()) return count.error();
    return static_cast<int64_t>(*count);
  }

  Status sgd(int32_t device, float* var, const float* grad, float* velocity, int64_t n, float lr, float momentum,
             bool nesterov) override {
    return run(device, [&](GpuDevice& dev) {
      const OptimTensor t{var, grad, velocity, nullptr, n};
      return sgd_update({&t, 1}, lr, momentum, nesterov, stream(dev));
    });
  }

  Status adam(int32_t device, float* var, const float* grad, float* m, float* v, int64_t n,
              const GpuAdamStep& k) override {
    return run(device, [&](GpuDevice& dev) {
      const OptimTensor t{var, grad, m, v, n};
      exact::AdamScalars s;
      s.lr_t = k.lr_t;
      s.one_minus_b1 = k.one_minus_b1;
      s.one_minus_b2 = k.one_minus_b2;
      s.keep = k.keep;
      s.eps = k.eps;
      return adam_update({&t, 1}, s, stream(dev));
    });
  }
};

}  // namespace

GpuBackend& cuda_backend() {
  static CudaBackend backend;  // stateless; never destroyed before the module
  return backend;
}

}  // namespace dtrain::cuda
