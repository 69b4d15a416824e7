// The losses as ops (engine/ops/loss_ops.hpp).
#include "engine/ops/loss_ops.hpp"

#include <cassert>
#include <vector>

#include "engine/backend/cuda/gpu_ops.hpp"
#include "engine/kernels/losses.hpp"
#include "engine/ops/dispatch.hpp"

namespace dtrain::ops {

namespace {
const float* in(const Tensor& t) { return static_cast<const float*>(t.raw()); }
float* out(Tensor* t) { return t != nullptr ? static_cast<float*>(t->raw()) : nullptr; }
// The example weights' pointer, null without weights.
const float* weights_of(const Tensor* w, int64_t b) {
  assert(w == nullptr || w->numel() == b);
  (void)b;
  return w != nullptr ? static_cast<const float*>(w->raw()) : nullptr;
}

// B examples of n elements each.
int64_t per_example(const Tensor& logits) {
  const int64_t b = logits.dim(0);
  return b == 0 ? 0 : logits.numel() / b;
}
}  // namespace

double sparse_softmax_cross_entropy(const Context& ctx, const Tensor& logits, const Tensor& labels, float grad_scale,
                                    Tensor* dlogits, const Tensor* weights) {
  const int64_t b = logits.dim(0);
  const int64_t c = logits.rank() < 2 ? 1 : logits.dim(-1);
  const int64_t rows = logits.numel() / c;          // b * positions
  const int64_t positions = b == 0 ? 1 : rows / b;  // per example
  assert(labels.numel() == rows && (dlogits == nullptr || dlogits->numel() == logits.numel()));
  // Each position weighs 1 / positions of its example.
  const double weight = 1.0 / static_cast<double>(positions);
  const float row_scale = static_cast<float>(grad_scale * weight);
  // Each row's loss, on the host (from a GPU: a wait, as the step's loss is
  // read every step), summed below in one order for every backend.
  thread_local std::vector<double> row_losses;
  row_losses.assign(static_cast<size_t>(rows), 0.0);
  on_device(ctx, "sparse_softmax_cross_entropy", {&logits, &labels, dlogits, weights}, [&] {
    kernels::sparse_softmax_xent_rows(in(logits), in(labels), out(dlogits), row_scale, row_losses.data(), rows, c,
                                      weights_of(weights, b), positions);
  }, [&] {
    gpu::sparse_xent(ctx.device, in(logits), in(labels), out(dlogits), row_scale, row_losses.data(), rows, c,
                     weights_of(weights, b), positions);
  });
  double total = 0.0;
  for (int64_t i = 0; i < b; ++i) {
    double example = 0.0;
    for (int64_t p = i * positions; p < (i + 1) * positions; ++p) example += row_losses[static_cast<size_t>(p)];
    total += example * weight;
  }
  return total;
}

double softmax_cross_entropy(const Context& ctx, const Tensor& logits, const Tensor& labels, float grad_scale,
                             Tensor* dlogits, const Tensor* weights) {
  assert(labels.numel() == logits.numel() && (dlogits == nullptr || dlogits->numel() == logits.numel()));
  double total = 0.0;
  on_device(ctx, "softmax_cross_entropy", {&logits, &labels, dlogits, weights}, [&] {
    total = kernels::softmax_xent(in(logits), in(labels), out(dlogits), grad_scale, logits.dim(0),
                                  per_example(logits), weights_of(weights, logits.dim(0)));
  });
  return total;
}

double sigmoid_cross_entropy(const Context& ctx, const Tensor& logits, const Tensor& labels, float grad_scale,
                             Tensor* dlogits, const Tensor* weights) {
  assert(labels.numel() == logits.numel() && (dlogits == nullptr || dlogits->numel() == logits.numel()));
  double total = 0.0;
  on_device(ctx, "sigmoid_cross_entropy", {&logits, &labels, dlogits, weights}, [&] {
    total = kernels::sigmoid_xent(in(logits), in(labels), out(dlogits), grad_scale, logits.dim(0),
                                  per_example(logits), weights_of(weights, logits.dim(0)));
  });
  return total;
}

double mean_squared_error(const Context& ctx, const Tensor& prediction, const Tensor& labels, float grad_scale,
                          Tensor* dlogits, const Tensor* weights) {
  assert(labels.numel() == prediction.numel() && (dlogits == nullptr || dlogits->numel() == prediction.numel()));
  double total = 0.0;
  on_device(ctx, "mean_squared_error", {&prediction, &labels, dlogits, weights}, [&] {
    total = kernels::mean_squared_error(in(prediction), in(labels), out(dlogits), grad_scale, prediction.dim(0),
                                        per_example(prediction), weights_of(weights, prediction.dim(0)));
  });
  return total;
}

}  // namespace dtrain::ops
