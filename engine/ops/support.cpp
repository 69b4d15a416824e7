// The backend support table.
#include "engine/ops/support.hpp"

#include <fmt/format.h>

#include <initializer_list>
#include <string>

namespace dtrain::ops {

namespace {

struct Row {
  std::string_view op;
  DeviceKind device;
  std::initializer_list<DType> compute;  // the policy's compute types this backend runs the op under
  const char* note;                       // why other types are missing
};

// cpu: oneDNN (f32; bf16 matmul and convolution with f32 accumulation) and
// plain loops, which compute in f32 under any policy. debug: the same
// kernels. cuda: the GPU kernels of engine/backend/cuda (cuBLASLt, cuDNN and
// our own, in the CUDA module), float32 only so far; an op without a cuda row
// has no GPU kernel yet. Losses and optimizers are rows by their names.
const Row kTable[] = {
    {"matmul", DeviceKind::cpu, {DType::f32, DType::bf16}, "oneDNN has no float16 matmul on the CPU"},
    {"conv2d", DeviceKind::cpu, {DType::f32, DType::bf16}, "oneDNN has no float16 convolution on the CPU"},
    // A convolution with a dilation above 1 (Conv2D::ops).
    {"conv2d_dilated", DeviceKind::cpu, {DType::f32, DType::bf16}, "oneDNN has no float16 convolution on the CPU"},
    {"pool2d", DeviceKind::cpu, {DType::f32, DType::bf16}, ""},
    // SAME pooling with more padding after the input than before (Pool2D::ops).
    {"pool2d_pad_after", DeviceKind::cpu, {DType::f32, DType::bf16}, ""},
    {"activation", DeviceKind::cpu, {DType::f32, DType::bf16}, ""},
    {"gelu", DeviceKind::cpu, {DType::f32, DType::bf16}, ""},
    {"leaky_relu", DeviceKind::cpu, {DType::f32, DType::bf16}, ""},
    {"batch_norm", DeviceKind::cpu, {DType::f32, DType::bf16}, ""},
    {"layer_norm", DeviceKind::cpu, {DType::f32, DType::bf16}, ""},
    {"global_pool", DeviceKind::cpu, {DType::f32, DType::bf16}, ""},
    {"embedding", DeviceKind::cpu, {DType::f32, DType::bf16}, ""},
    {"position_embedding", DeviceKind::cpu, {DType::f32, DType::bf16}, ""},
    {"dropout", DeviceKind::cpu, {DType::f32, DType::bf16}, ""},
    {"merge", DeviceKind::cpu, {DType::f32, DType::bf16}, ""},
    {"pad", DeviceKind::cpu, {DType::f32, DType::bf16}, ""},
    // multi_head_attention's head permutes, masked softmax and input-gradient sums
    {"attention", DeviceKind::cpu, {DType::f32, DType::bf16}, ""},
    {"sum_rows", DeviceKind::cpu, {DType::f32, DType::bf16}, ""},
    {"mul", DeviceKind::cpu, {DType::f32, DType::bf16}, ""},
    {"reduce", DeviceKind::cpu, {DType::f32, DType::bf16}, ""},
    {"sparse_softmax_cross_entropy", DeviceKind::cpu, {DType::f32, DType::bf16}, ""},
    {"softmax_cross_entropy", DeviceKind::cpu, {DType::f32, DType::bf16}, ""},
    {"sigmoid_cross_entropy", DeviceKind::cpu, {DType::f32, DType::bf16}, ""},
    {"mean_squared_error", DeviceKind::cpu, {DType::f32, DType::bf16}, ""},
    {"sgd", DeviceKind::cpu, {DType::f32, DType::bf16}, ""},
    {"adam", DeviceKind::cpu, {DType::f32, DType::bf16}, ""},
    {"adamw", DeviceKind::cpu, {DType::f32, DType::bf16}, ""},
    {"rmsprop", DeviceKind::cpu, {DType::f32, DType::bf16}, ""},
    {"adagrad", DeviceKind::cpu, {DType::f32, DType::bf16}, ""},
    // cuda: what a dense MLP and a small CNN train with (sample_configs/mnist_mlp.yaml, mnist_cnn.yaml).
    {"matmul", DeviceKind::cuda, {DType::f32}, "the GPU backend runs float32 only so far"},
    {"conv2d", DeviceKind::cuda, {DType::f32}, "the GPU backend runs float32 only so far"},
    {"pool2d", DeviceKind::cuda, {DType::f32}, "the GPU backend runs float32 only so far"},
    {"conv2d_dilated", DeviceKind::cuda, {},
     "cuDNN may offer no NHWC float32 backward algorithm without TF32 tensor cores for a dilated convolution, and "
     "none has been seen to run on a GPU yet; use dilation 1 or a cpu:N device"},
    {"pool2d_pad_after", DeviceKind::cuda, {},
     "cuDNN pools with one pad per dimension, so padding: same with more padding after the input than before, "
     "as a 7x7 input pooled 2x2 with stride 2 needs, has no GPU kernel yet; use padding: valid "
     "or a cpu:N device"},
    {"activation", DeviceKind::cuda, {DType::f32}, "the GPU backend runs float32 only so far"},
    {"dropout", DeviceKind::cuda, {DType::f32}, "the GPU backend runs float32 only so far"},
    {"sum_rows", DeviceKind::cuda, {DType::f32}, "the GPU backend runs float32 only so far"},
    {"mul", DeviceKind::cuda, {DType::f32}, "the GPU backend runs float32 only so far"},
    {"reduce", DeviceKind::cuda, {DType::f32}, "the GPU backend runs float32 only so far"},
    {"sparse_softmax_cross_entropy", DeviceKind::cuda, {DType::f32}, "the GPU backend runs float32 only so far"},
    {"sgd", DeviceKind::cuda, {DType::f32}, "the GPU backend runs float32 only so far"},
    {"adam", DeviceKind::cuda, {DType::f32}, "the GPU backend runs float32 only so far"},
    {"adamw", DeviceKind::cuda, {DType::f32}, "the GPU backend runs float32 only so far"},
};

// The debug backend runs the CPU kernels: it supports what cpu supports.
DeviceKind table_kind(DeviceKind d) { return d == DeviceKind::debug ? DeviceKind::cpu : d; }

const Row* find(std::string_view op, DeviceKind d) {
  for (const Row& r : kTable) {
    if (r.op == op && r.device == table_kind(d)) return &r;
  }
  return nullptr;
}

const char* backend_name(DeviceKind d) {
  switch (d) {
    case DeviceKind::cpu: return "cpu";
    case DeviceKind::debug: return "debug";
    case DeviceKind::cuda: return "cuda";
  }
  return "?";
}

}  // namespace

bool supports(std::string_view op, const Context& ctx) {
  const Row* r = find(op, ctx.device.kind);
  if (r == nullptr) return false;
  for (DType t : r->compute) {
    if (t == ctx.compute) return true;
  }
  return false;
}

std::string why_unsupported(std::string_view op, const Context& ctx) {
  const Row* r = find(op, ctx.device.kind);
  if (r == nullptr && ctx.device.kind == DeviceKind::cuda) {
    return fmt::format("the cuda backend has no {} op in this dtrain yet (on a GPU it runs dense, conv2d, "
                       "max_pool2d, avg_pool2d, flatten, reshape, dropout and relu/tanh/sigmoid/softmax "
                       "activations, sparse_softmax_cross_entropy, sgd and adam/adamw so far); use a cpu:N device",
                       op);
  }
  if (r == nullptr) {
    return fmt::format("the {} backend has no {} op in this dtrain", backend_name(ctx.device.kind), op);
  }
  std::string out = fmt::format("the {} backend has no {} {}", backend_name(ctx.device.kind), dtype_name(ctx.compute), op);
  if (*r->note) out += fmt::format(" ({})", r->note);
  return out;
}

}  // namespace dtrain::ops
