// The compute backend's table entries (backend_entries.hpp): each resolves
// its GPU, runs the engine/cuda function on the compute stream and turns a
// Status or an exception into the table's (code, message) form.
#include "engine/cuda/backend_entries.hpp"

#include <fmt/format.h>

#include <exception>
#include <functional>
#include <vector>

#include "engine/cuda/backend_kernels.hpp"
#include "engine/cuda/check.hpp"
#include "engine/cuda/cudnn_ops.hpp"
#include "engine/cuda/device_context.hpp"
#include "engine/cuda/dropout.hpp"
#include "engine/cuda/eltwise.hpp"
#include "engine/cuda/fused_optim.hpp"
#include "engine/cuda/matmul_lt.hpp"

namespace dtrain::cuda::entries {

namespace {

int32_t fail(DtrainCudaError* err, std::string_view message) {
  if (err) copy_c_text(err->message, message);
  return 1;
}

// Runs body(dev) with GPU `device` current; any failure becomes the entry's error.
int32_t run(int32_t device, DtrainCudaError* err, const std::function<Status(GpuDevice&)>& body) noexcept {
  try {
    Result<GpuDevice*> dev = gpu_device(device);
    if (!dev.ok()) return fail(err, dev.error().message);
    Result<DeviceGuard> guard = DeviceGuard::set(device);
    if (!guard.ok()) return fail(err, guard.error().message);
    Status s = body(**dev);
    return s.ok() ? 0 : fail(err, s.error().message);
  } catch (const std::exception& e) {
    return fail(err, fmt::format("gpu:{}: {}", device, e.what()));
  } catch (...) {
    return fail(err, fmt::format("gpu:{}: unknown exception", device));
  }
}

cudaStream_t stream(GpuDevice& dev) { return dev.compute.get(); }

// Copies `count` doubles from the GPU's memory to the host after the compute
// stream's work, and waits.
Status read_back(GpuDevice& dev, const double* src, double* host, size_t count) {
  DTRAIN_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(host, src, count * sizeof(double), cudaMemcpyDeviceToHost, stream(dev)));
  return dev.compute.synchronize();
}

}  // namespace

int32_t mem_alloc(int32_t device, uint64_t bytes, void** out, DtrainCudaError* err) noexcept {
  *out = nullptr;
  return run(device, err, [&](GpuDevice& dev) -> Status {
    Result<void*> p = dev.allocator.allocate(bytes, stream_id(dev.compute));
    if (!p.ok()) return p.error();
    *out = *p;
    return {};
  });
}

void mem_free(int32_t device, void* p) noexcept {
  if (p == nullptr) return;
  DtrainCudaError ignored;
  // Every use of the block was queued on the compute stream: the block's
  // next user on that stream runs after them (caching_allocator.hpp).
  run(device, &ignored, [&](GpuDevice& dev) -> Status {
    dev.allocator.free(p);
    return {};
  });
}

int32_t mem_copy(int32_t dst_device, void* dst, int32_t src_device, const void* src, uint64_t bytes,
                 DtrainCudaError* err) noexcept {
  if (bytes == 0) return 0;
  const int32_t on = src_device >= 0 ? src_device : dst_device;
  return run(on, err, [&](GpuDevice& dev) -> Status {
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

int32_t mem_fill32(int32_t device, void* p, uint32_t word, int64_t n, DtrainCudaError* err) noexcept {
  return run(device, err, [&](GpuDevice& dev) { return fill32(p, word, n, stream(dev)); });
}

int32_t matmul(int32_t device, const DtrainCudaMatmul* a, DtrainCudaError* err) noexcept {
  return run(device, err, [&](GpuDevice& dev) -> Status {
    if (a->m == 0 || a->n == 0) return {};
    if (a->k == 0) return runtime_error(fmt::format("gpu:{}: matmul with an empty inner dimension (k = 0)", device));
    const kernels::MatmulShape s{a->m, a->n, a->k, a->trans_a != 0, a->trans_b != 0};
    const Epilogue e = a->bias != nullptr ? (a->relu ? Epilogue::kBiasRelu : Epilogue::kBias)
                                          : (a->relu ? Epilogue::kRelu : Epilogue::kNone);
    return cuda::matmul(dev, s, a->a, a->b, a->bias, a->c, e, a->tf32 ? MathMode::kTf32 : MathMode::kFloat32);
  });
}

int32_t eltwise(int32_t device, const DtrainCudaEltwise* a, DtrainCudaError* err) noexcept {
  return run(device, err, [&](GpuDevice& dev) -> Status {
    cudaStream_t st = stream(dev);
    switch (a->kind) {
      case kDtrainEwRelu: return relu_forward(a->a, a->out, a->n, st);
      case kDtrainEwReluGrad: return relu_backward(a->a, a->b, a->out, a->n, st);
      case kDtrainEwSigmoid: return sigmoid_forward(a->a, a->out, a->n, st);
      case kDtrainEwSigmoidGrad: return sigmoid_backward(a->a, a->b, a->out, a->n, st);
      case kDtrainEwTanh: return tanh_forward(a->a, a->out, a->n, st);
      case kDtrainEwTanhGrad: return tanh_backward(a->a, a->b, a->out, a->n, st);
      case kDtrainEwMul: return mul(a->a, a->b, a->out, a->n, st);
      case kDtrainEwAddInto: return axpy(1.0f, a->a, a->out, a->n, st);
      case kDtrainEwScale: return scale(a->alpha, a->a, a->out, a->n, st);
    }
    return runtime_error(fmt::format("gpu:{}: unknown elementwise kind {}", device, a->kind));
  });
}

int32_t rows(int32_t device, const DtrainCudaRows* a, DtrainCudaError* err) noexcept {
  return run(device, err, [&](GpuDevice& dev) -> Status {
    cudaStream_t st = stream(dev);
    switch (a->kind) {
      case kDtrainRowsSoftmax: return softmax_rows(a->a, a->out, a->rows, a->cols, st);
      case kDtrainRowsSoftmaxGrad: return softmax_backward_rows(a->a, a->b, a->out, a->rows, a->cols, st);
      case kDtrainRowsSumRows: return sum_rows(a->a, a->out, a->rows, a->cols, st);
    }
    return runtime_error(fmt::format("gpu:{}: unknown row op kind {}", device, a->kind));
  });
}

int32_t dropout(int32_t device, uint64_t key, int64_t example_offset, float rate, const float* x, float* mask,
                float* y, int64_t rows, int64_t per, DtrainCudaError* err) noexcept {
  return run(device, err, [&](GpuDevice& dev) {
    return dropout_forward(key, example_offset, rate, x, mask, y, rows, per, stream(dev));
  });
}

int32_t sparse_xent(int32_t device, const DtrainCudaXent* a, DtrainCudaError* err) noexcept {
  return run(device, err, [&](GpuDevice& dev) -> Status {
    if (a->rows <= 0) return {};
    Result<CachedBuffer> losses =
        dev.allocator.allocate_buffer(static_cast<size_t>(a->rows) * sizeof(double), stream_id(dev.compute));
    if (!losses.ok()) return losses.error();
    auto* d = static_cast<double*>(losses->get());
    if (Status s = sparse_xent_rows(a->logits, a->labels, a->dlogits, a->row_scale, d, a->rows, a->classes,
                                    stream(dev));
        !s.ok())
      return s;
    return read_back(dev, d, a->host_row_losses, static_cast<size_t>(a->rows));
  });
}

int32_t reduce(int32_t device, int32_t kind, const float* x, int64_t n, double* host_out,
               DtrainCudaError* err) noexcept {
  return run(device, err, [&](GpuDevice& dev) -> Status {
    Result<CachedBuffer> partials =
        dev.allocator.allocate_buffer(kReduceBlocks * sizeof(double), stream_id(dev.compute));
    if (!partials.ok()) return partials.error();
    auto* d = static_cast<double*>(partials->get());
    if (Status s = reduce_partials(kind == kDtrainReduceNonFinite, x, n, d, stream(dev)); !s.ok()) return s;
    std::vector<double> host(kReduceBlocks);
    if (Status s = read_back(dev, d, host.data(), host.size()); !s.ok()) return s;
    double total = 0.0;
    for (double v : host) total += v;  // index order: deterministic
    *host_out = total;
    return {};
  });
}

int32_t optimizer(int32_t device, const DtrainCudaOptim* a, DtrainCudaError* err) noexcept {
  return run(device, err, [&](GpuDevice& dev) -> Status {
    const OptimTensor t{a->var, a->grad, a->slot0, a->slot1, a->n};
    if (a->kind == kDtrainOptimSgd) {
      return sgd_update({&t, 1}, a->lr, a->momentum, a->nesterov != 0, stream(dev));
    }
    if (a->kind == kDtrainOptimAdam) {
      exact::AdamScalars s;
      s.lr_t = a->lr_t;
      s.one_minus_b1 = a->one_minus_b1;
      s.one_minus_b2 = a->one_minus_b2;
      s.keep = a->keep;
      s.eps = a->eps;
      return adam_update({&t, 1}, s, stream(dev));
    }
    return runtime_error(fmt::format("gpu:{}: unknown optimizer kind {}", device, a->kind));
  });
}

int32_t conv2d(int32_t device, const DtrainCudaConv* a, DtrainCudaError* err) noexcept {
  return run(device, err, [&](GpuDevice& dev) -> Status {
    kernels::Conv2dShape s;
    s.n = a->n;
    s.ih = a->ih, s.iw = a->iw, s.ic = a->ic;
    s.oh = a->oh, s.ow = a->ow, s.oc = a->oc;
    s.kh = a->kh, s.kw = a->kw, s.sh = a->sh, s.sw = a->sw, s.dh = a->dil_h, s.dw = a->dil_w;
    s.pad_top = a->pad_top, s.pad_left = a->pad_left, s.pad_bottom = a->pad_bottom, s.pad_right = a->pad_right;
    s.relu = a->relu != 0;
    if (s.n == 0) return {};
    const MathMode mode = a->tf32 ? MathMode::kTf32 : MathMode::kFloat32;
    switch (a->kind) {
      case kDtrainConvForward: return conv2d_forward(dev, s, a->x, a->w, a->bias, a->y, mode);
      case kDtrainConvBackwardData: return conv2d_backward_data(dev, s, a->dy, a->w, a->dx, mode);
      case kDtrainConvBackwardWeights: return conv2d_backward_weights(dev, s, a->x, a->dy, a->dw, a->db, mode);
    }
    return runtime_error(fmt::format("gpu:{}: unknown convolution kind {}", device, a->kind));
  });
}

int32_t pool2d(int32_t device, const DtrainCudaPool* a, DtrainCudaError* err) noexcept {
  return run(device, err, [&](GpuDevice& dev) -> Status {
    kernels::Pool2dShape s;
    s.kind = a->max ? kernels::PoolKind::kMax : kernels::PoolKind::kAvg;
    s.n = a->n;
    s.ih = a->ih, s.iw = a->iw, s.c = a->c, s.oh = a->oh, s.ow = a->ow;
    s.kh = a->kh, s.kw = a->kw, s.sh = a->sh, s.sw = a->sw;
    s.pad_top = a->pad_top, s.pad_left = a->pad_left, s.pad_bottom = a->pad_bottom, s.pad_right = a->pad_right;
    if (s.n == 0) return {};
    if (a->backward) return pool2d_backward(dev, s, a->x, a->y, a->dy, a->dx);
    return pool2d_forward(dev, s, a->x, a->y);
  });
}

int32_t mem_stats(int32_t device, DtrainCudaMemStats* out, DtrainCudaError* err) noexcept {
  *out = DtrainCudaMemStats{};
  return run(device, err, [&](GpuDevice& dev) -> Status {
    const AllocatorStats s = dev.allocator.stats();
    *out = DtrainCudaMemStats{s.allocated_bytes,      s.reserved_bytes,      s.peak_allocated_bytes,
                              s.peak_reserved_bytes,  s.backend_allocations, s.backend_frees};
    return {};
  });
}

}  // namespace dtrain::cuda::entries
