// The cuda backend's host side (gpu_ops.hpp): each op fills the table's
// argument struct and checks the entry's result.
#include "engine/backend/cuda/gpu_ops.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "engine/cuda_module.hpp"

namespace dtrain::gpu {

namespace {

const DtrainCudaModule& table() {
  Result<const CudaModule*> m = load_cuda_module();
  if (!m.ok()) {
    std::fprintf(stderr, "dtrain: internal error: a GPU op was requested, but the CUDA module is not usable: %s\n",
                 m.error().message.c_str());
    std::abort();
  }
  return *(*m)->table;
}

// Runs `entry` (the table call) and throws on its failure.
template <class F>
void call(const char* op, const Device& d, F&& entry) {
  DtrainCudaError err{};
  if (entry(table(), &err) != 0) {
    throw std::runtime_error(fmt::format("{} on {} failed: {}", op, d.str(), err.message));
  }
}

void ew(const char* op, const Device& d, int32_t kind, const float* a, const float* b, float* out, int64_t n,
        float alpha = 0.0f) {
  const DtrainCudaEltwise args{kind, n, a, b, out, alpha};
  call(op, d, [&](const DtrainCudaModule& t, DtrainCudaError* e) { return t.eltwise(d.index, &args, e); });
}

void row_op(const char* op, const Device& d, int32_t kind, const float* a, const float* b, float* out, int64_t rows,
            int64_t cols) {
  const DtrainCudaRows args{kind, rows, cols, a, b, out};
  call(op, d, [&](const DtrainCudaModule& t, DtrainCudaError* e) { return t.rows(d.index, &args, e); });
}

class CudaMemory final : public DeviceMemory {
 public:
  void* allocate(const Device& d, size_t bytes) override {
    void* p = nullptr;
    call("allocation", d, [&](const DtrainCudaModule& t, DtrainCudaError* e) {
      return t.mem_alloc(d.index, std::max<size_t>(bytes, 1), &p, e);
    });
    return p;
  }
  void deallocate(const Device& d, void* p, size_t) override { table().mem_free(d.index, p); }
  void copy(const Device& dst_dev, void* dst, const Device& src_dev, const void* src, size_t bytes) override {
    count_copy(dst_dev, src_dev);
    const int32_t to = dst_dev.kind == DeviceKind::cuda ? dst_dev.index : -1;
    const int32_t from = src_dev.kind == DeviceKind::cuda ? src_dev.index : -1;
    call("copy", to >= 0 ? dst_dev : src_dev, [&](const DtrainCudaModule& t, DtrainCudaError* e) {
      return t.mem_copy(to, dst, from, src, bytes, e);
    });
  }
  void fill32(const Device& d, void* p, uint32_t word, int64_t n) override {
    call("fill", d, [&](const DtrainCudaModule& t, DtrainCudaError* e) { return t.mem_fill32(d.index, p, word, n, e); });
  }
};

}  // namespace

Status check_device(const Device& d) {
  Result<const CudaModule*> m = load_cuda_module();
  if (!m.ok()) return runtime_error(m.error().message);
  DtrainCudaReport report{};
  (*m)->table->discover_gpus(&report);
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

MemoryStats memory_stats(const Device& d) {
  DtrainCudaMemStats m{};
  call("memory statistics", d, [&](const DtrainCudaModule& t, DtrainCudaError* e) { return t.mem_stats(d.index, &m, e); });
  return {m.allocated_bytes,      m.reserved_bytes,      m.peak_allocated_bytes,
          m.peak_reserved_bytes,  m.backend_allocations, m.backend_frees};
}

void matmul(const Device& d, const kernels::MatmulShape& s, const float* a, const float* b, const float* bias,
            float* c, bool relu, bool tf32) {
  const DtrainCudaMatmul args{s.m, s.n, s.k, s.trans_a, s.trans_b, relu, tf32, a, b, bias, c};
  call("matmul", d, [&](const DtrainCudaModule& t, DtrainCudaError* e) { return t.matmul(d.index, &args, e); });
}

namespace {

DtrainCudaConv conv_args(int32_t kind, const kernels::Conv2dShape& s, bool tf32) {
  DtrainCudaConv a{};
  a.kind = kind;
  a.relu = s.relu;
  a.tf32 = tf32;
  a.n = s.n, a.ih = s.ih, a.iw = s.iw, a.ic = s.ic, a.oh = s.oh, a.ow = s.ow, a.oc = s.oc;
  a.kh = s.kh, a.kw = s.kw, a.sh = s.sh, a.sw = s.sw, a.dil_h = s.dh, a.dil_w = s.dw;
  a.pad_top = s.pad_top, a.pad_left = s.pad_left, a.pad_bottom = s.pad_bottom, a.pad_right = s.pad_right;
  return a;
}

void conv(const char* op, const Device& d, const DtrainCudaConv& a) {
  call(op, d, [&](const DtrainCudaModule& t, DtrainCudaError* e) { return t.conv2d(d.index, &a, e); });
}

void pool(const char* op, const Device& d, const kernels::Pool2dShape& s, bool backward, const float* x, float* y,
          const float* dy, float* dx) {
  DtrainCudaPool a{};
  a.backward = backward;
  a.max = s.kind == kernels::PoolKind::kMax;
  a.n = s.n, a.ih = s.ih, a.iw = s.iw, a.c = s.c, a.oh = s.oh, a.ow = s.ow;
  a.kh = s.kh, a.kw = s.kw, a.sh = s.sh, a.sw = s.sw;
  a.pad_top = s.pad_top, a.pad_left = s.pad_left, a.pad_bottom = s.pad_bottom, a.pad_right = s.pad_right;
  a.x = x, a.y = y, a.dy = dy, a.dx = dx;
  call(op, d, [&](const DtrainCudaModule& t, DtrainCudaError* e) { return t.pool2d(d.index, &a, e); });
}

}  // namespace

void conv2d_forward(const Device& d, const kernels::Conv2dShape& s, const float* x, const float* w, const float* bias,
                    float* y, bool tf32) {
  DtrainCudaConv a = conv_args(kDtrainConvForward, s, tf32);
  a.x = x, a.w = w, a.bias = bias, a.y = y;
  conv("conv2d", d, a);
}

void conv2d_backward_data(const Device& d, const kernels::Conv2dShape& s, const float* dy, const float* w, float* dx,
                          bool tf32) {
  DtrainCudaConv a = conv_args(kDtrainConvBackwardData, s, tf32);
  a.dy = dy, a.w = w, a.dx = dx;
  conv("conv2d backward data", d, a);
}

void conv2d_backward_weights(const Device& d, const kernels::Conv2dShape& s, const float* x, const float* dy,
                             float* dw, float* db, bool tf32) {
  DtrainCudaConv a = conv_args(kDtrainConvBackwardWeights, s, tf32);
  a.x = x, a.dy = dy, a.dw = dw, a.db = db;
  conv("conv2d backward weights", d, a);
}

void pool2d_forward(const Device& d, const kernels::Pool2dShape& s, const float* x, float* y) {
  pool("pool2d", d, s, false, x, y, nullptr, nullptr);
}

void pool2d_backward(const Device& d, const kernels::Pool2dShape& s, const float* x, const float* y, const float* dy,
                     float* dx) {
  pool("pool2d backward", d, s, true, x, const_cast<float*>(y), dy, dx);
}

void relu(const Device& d, const float* x, float* y, int64_t n) { ew("relu", d, kDtrainEwRelu, x, nullptr, y, n); }
void relu_grad(const Device& d, const float* y, const float* dy, float* dx, int64_t n) {
  ew("relu gradient", d, kDtrainEwReluGrad, y, dy, dx, n);
}
void sigmoid(const Device& d, const float* x, float* y, int64_t n) {
  ew("sigmoid", d, kDtrainEwSigmoid, x, nullptr, y, n);
}
void sigmoid_grad(const Device& d, const float* y, const float* dy, float* dx, int64_t n) {
  ew("sigmoid gradient", d, kDtrainEwSigmoidGrad, y, dy, dx, n);
}
void tanh(const Device& d, const float* x, float* y, int64_t n) { ew("tanh", d, kDtrainEwTanh, x, nullptr, y, n); }
void tanh_grad(const Device& d, const float* y, const float* dy, float* dx, int64_t n) {
  ew("tanh gradient", d, kDtrainEwTanhGrad, y, dy, dx, n);
}
void mul(const Device& d, const float* a, const float* b, float* out, int64_t n) {
  ew("mul", d, kDtrainEwMul, a, b, out, n);
}
void add_into(const Device& d, float* acc, const float* x, int64_t n) {
  ew("add_into", d, kDtrainEwAddInto, x, nullptr, acc, n);
}
void scale(const Device& d, float* x, float s, int64_t n) { ew("scale", d, kDtrainEwScale, x, nullptr, x, n, s); }

void softmax(const Device& d, const float* x, float* y, int64_t rows, int64_t cols) {
  row_op("softmax", d, kDtrainRowsSoftmax, x, nullptr, y, rows, cols);
}
void softmax_grad(const Device& d, const float* y, const float* dy, float* dx, int64_t rows, int64_t cols) {
  row_op("softmax gradient", d, kDtrainRowsSoftmaxGrad, y, dy, dx, rows, cols);
}
void sum_rows(const Device& d, const float* x, float* out, int64_t rows, int64_t cols) {
  row_op("sum_rows", d, kDtrainRowsSumRows, x, nullptr, out, rows, cols);
}

void dropout(const Device& d, uint64_t key, int64_t example_offset, float rate, const float* x, float* mask, float* y,
             int64_t rows, int64_t per) {
  call("dropout", d, [&](const DtrainCudaModule& t, DtrainCudaError* e) {
    return t.dropout(d.index, key, example_offset, rate, x, mask, y, rows, per, e);
  });
}

void sparse_xent(const Device& d, const float* logits, const float* labels, float* dlogits, float row_scale,
                 double* row_losses, int64_t rows, int64_t classes) {
  const DtrainCudaXent args{rows, classes, logits, labels, dlogits, row_scale, row_losses};
  call("sparse_softmax_cross_entropy", d,
       [&](const DtrainCudaModule& t, DtrainCudaError* e) { return t.sparse_xent(d.index, &args, e); });
}

double sum_squares(const Device& d, const float* x, int64_t n) {
  double out = 0.0;
  call("sum_squares", d, [&](const DtrainCudaModule& t, DtrainCudaError* e) {
    return t.reduce(d.index, kDtrainReduceSumSquares, x, n, &out, e);
  });
  return out;
}

int64_t count_nonfinite(const Device& d, const float* x, int64_t n) {
  double out = 0.0;
  call("all_finite", d, [&](const DtrainCudaModule& t, DtrainCudaError* e) {
    return t.reduce(d.index, kDtrainReduceNonFinite, x, n, &out, e);
  });
  return static_cast<int64_t>(out);
}

void sgd(const Device& d, float* var, const float* grad, float* velocity, int64_t n, float lr, float momentum,
         bool nesterov) {
  DtrainCudaOptim args{};
  args.kind = kDtrainOptimSgd;
  args.var = var;
  args.grad = grad;
  args.slot0 = velocity;
  args.n = n;
  args.lr = lr;
  args.momentum = momentum;
  args.nesterov = nesterov;
  call("sgd", d, [&](const DtrainCudaModule& t, DtrainCudaError* e) { return t.optimizer(d.index, &args, e); });
}

void adam(const Device& d, float* var, const float* grad, float* m, float* v, int64_t n, const AdamStep& k) {
  DtrainCudaOptim args{};
  args.kind = kDtrainOptimAdam;
  args.var = var;
  args.grad = grad;
  args.slot0 = m;
  args.slot1 = v;
  args.n = n;
  args.lr_t = k.lr_t;
  args.one_minus_b1 = k.one_minus_b1;
  args.one_minus_b2 = k.one_minus_b2;
  args.keep = k.keep;
  args.eps = k.eps;
  call("adam", d, [&](const DtrainCudaModule& t, DtrainCudaError* e) { return t.optimizer(d.index, &args, e); });
}

}  // namespace dtrain::gpu
