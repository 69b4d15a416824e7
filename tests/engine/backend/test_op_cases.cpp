// One small case per op of the losses and of multi_head_attention's dropout
// and gradient sums (ops/loss_ops.hpp, ops/layer_ops.hpp), on every backend
// present (cpu and debug), each against an independent computation written
// here from the op's contract, with a tolerance per op (ggml's
// test-backend-ops). The CPU kernels sum in double in the order the references
// below use, so the losses' sums agree to double rounding; the float32
// gradients to float rounding of exp and log.
#include <doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <vector>

#include "engine/ops/layer_ops.hpp"
#include "engine/ops/loss_ops.hpp"
#include "engine/rng.hpp"

namespace dtrain {
namespace {

struct OpTolerance {
  double value;  // relative, the loss sum
  double grad;   // absolute, each gradient element (gradients here are O(1))
};
// Losses: a double sum of float exp/log terms against the same in double.
constexpr OpTolerance kSparseXent{1e-6, 1e-6}, kSoftmaxXent{1e-6, 1e-6}, kSigmoidXent{1e-6, 1e-6};
// (x - t)^2 of float inputs is exact in double; the gradient 2 s (x - t) / n rounds once in float.
constexpr OpTolerance kMse{1e-15, 1e-7};

std::vector<Device> devices() { return {kHost, Device{DeviceKind::debug, 0}}; }

Tensor values(const Shape& shape, uint64_t seed, float lo, float hi) {
  Tensor t(shape);
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  for (int64_t i = 0; i < t.numel(); ++i) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    t[i] = lo + (hi - lo) * static_cast<float>(s >> 40) / static_cast<float>(1ull << 24);
  }
  return t;
}

using LossOp = double (*)(const ops::Context&, const Tensor&, const Tensor&, float, Tensor*);

// Runs `op` on every device; CHECKs its sum against want (relative) and its
// gradient against want_grad (absolute), and that without dlogits the sum is the same.
void check_loss(const char* name, LossOp op, const Tensor& logits, const Tensor& labels, float grad_scale,
                double want, const std::vector<double>& want_grad, OpTolerance tol) {
  for (const Device& d : devices()) {
    INFO(fmt::format("{} on {}", name, d.str()));
    const ops::Context ctx{d, DType::f32};
    Tensor grad = Tensor::empty(logits.shape(), DType::f32, d);
    const double got = op(ctx, logits.to(d), labels.to(d), grad_scale, &grad);
    CHECK(std::fabs(got - want) <= tol.value * std::fabs(want));
    const std::vector<float> g = grad.to_vector();
    REQUIRE(g.size() == want_grad.size());
    for (size_t i = 0; i < g.size(); ++i) {
      INFO("gradient element " << i << ": " << g[i] << " want " << want_grad[i]);
      CHECK(std::fabs(g[i] - want_grad[i]) <= tol.grad);
    }
    CHECK(op(ctx, logits.to(d), labels.to(d), grad_scale, nullptr) == got);
  }
}

// log softmax(x)_j of one row, in double.
std::vector<double> log_softmax(const float* x, int64_t c) {
  double m = x[0];
  for (int64_t j = 1; j < c; ++j) m = std::max(m, double{x[j]});
  double s = 0;
  for (int64_t j = 0; j < c; ++j) s += std::exp(x[j] - m);
  std::vector<double> out(static_cast<size_t>(c));
  for (int64_t j = 0; j < c; ++j) out[static_cast<size_t>(j)] = x[j] - m - std::log(s);
  return out;
}

TEST_CASE("op sparse_softmax_cross_entropy: mean over positions of -log softmax[label], gradient s (softmax - onehot) / P") {
  // 3 examples of 2 positions of 4 classes.
  const Tensor logits = values({3, 2, 4}, 1, -3.0f, 3.0f);
  const Tensor labels = Tensor::from({3, 2}, {0, 3, 1, 1, 2, 0});
  const float s = 0.25f;
  double want = 0;
  std::vector<double> want_grad;
  for (int64_t r = 0; r < 6; ++r) {
    const std::vector<double> ls = log_softmax(logits.data() + r * 4, 4);
    const auto k = static_cast<size_t>(labels[r]);
    want += -ls[k] / 2.0;
    for (size_t j = 0; j < 4; ++j) want_grad.push_back(s / 2.0 * (std::exp(ls[j]) - (j == k ? 1.0 : 0.0)));
  }
  check_loss("sparse_softmax_cross_entropy", &ops::sparse_softmax_cross_entropy, logits, labels, s, want, want_grad,
             kSparseXent);
}

TEST_CASE("op sparse_softmax_cross_entropy: a label that is not a class id gives NaN for its example and row") {
  const Tensor logits = values({2, 3}, 2, -1.0f, 1.0f);
  const Tensor labels = Tensor::from({2}, {1, 3});
  for (const Device& d : devices()) {
    INFO(d.str());
    Tensor grad = Tensor::empty(logits.shape(), DType::f32, d);
    CHECK(std::isnan(ops::sparse_softmax_cross_entropy(ops::Context{d, DType::f32}, logits.to(d), labels.to(d), 1.0f,
                                                       &grad)));
    const std::vector<float> g = grad.to_vector();
    for (size_t j = 0; j < 3; ++j) CHECK(std::isfinite(g[j]));
    for (size_t j = 3; j < 6; ++j) CHECK(std::isnan(g[j]));
  }
}

TEST_CASE("op softmax_cross_entropy: -sum t log softmax, gradient s (softmax sum(t) - t)") {
  const Tensor logits = values({3, 5}, 3, -3.0f, 3.0f);
  const Tensor targets = values({3, 5}, 4, 0.0f, 0.5f);  // rows need not sum to one
  const float s = 0.5f;
  double want = 0;
  std::vector<double> want_grad;
  for (int64_t i = 0; i < 3; ++i) {
    const std::vector<double> ls = log_softmax(logits.data() + i * 5, 5);
    double tsum = 0;
    for (int64_t j = 0; j < 5; ++j) tsum += targets[i * 5 + j];
    for (int64_t j = 0; j < 5; ++j) {
      want -= targets[i * 5 + j] * ls[static_cast<size_t>(j)];
      want_grad.push_back(s * (std::exp(ls[static_cast<size_t>(j)]) * tsum - targets[i * 5 + j]));
    }
  }
  check_loss("softmax_cross_entropy", &ops::softmax_cross_entropy, logits, targets, s, want, want_grad, kSoftmaxXent);
}

TEST_CASE("op sigmoid_cross_entropy: mean over elements of -t log p - (1 - t) log(1 - p), gradient s (p - t) / n") {
  const Tensor logits = values({2, 6}, 5, -4.0f, 4.0f);
  const Tensor targets = values({2, 6}, 6, 0.0f, 1.0f);
  const float s = 0.5f;
  double want = 0;
  std::vector<double> want_grad;
  for (int64_t i = 0; i < 12; ++i) {
    const double x = logits[i], t = targets[i], p = 1.0 / (1.0 + std::exp(-x));
    want += (-t * std::log(p) - (1 - t) * std::log(1 - p)) / 6.0;
    want_grad.push_back(s * (p - t) / 6.0);
  }
  check_loss("sigmoid_cross_entropy", &ops::sigmoid_cross_entropy, logits, targets, s, want, want_grad, kSigmoidXent);
}

TEST_CASE("op mean_squared_error: mean over elements of (x - t)^2, gradient 2 s (x - t) / n") {
  const Tensor x = values({4, 3}, 7, -2.0f, 2.0f);
  const Tensor t = values({4, 3}, 8, -2.0f, 2.0f);
  const float s = 0.25f;
  double want = 0;
  std::vector<double> want_grad;
  for (int64_t i = 0; i < 4; ++i) {
    double sum = 0;
    for (int64_t j = i * 3; j < i * 3 + 3; ++j) {
      sum += (double{x[j]} - t[j]) * (double{x[j]} - t[j]);
      want_grad.push_back(2.0 * s * (double{x[j]} - t[j]) / 3.0);
    }
    want += sum / 3.0;
  }
  check_loss("mean_squared_error", &ops::mean_squared_error, x, t, s, want, want_grad, kMse);
}

TEST_CASE("op dropout: element e of example g kept iff CounterRng(key, g).uniform(e) >= rate, scaled 1 / (1 - rate)") {
  // 3 examples of 2 x 5 elements, from global example 10; tolerance 0 (one float multiply).
  const Tensor x = values({3, 2, 5}, 9, -1.0f, 1.0f);
  const uint64_t key = 0x1234567890abcdefull;
  const float rate = 0.4f, scale = 1.0f / (1.0f - rate);
  std::vector<float> want_mask, want_y;
  for (int64_t r = 0; r < 3; ++r) {
    const CounterRng rng(key, static_cast<uint64_t>(10 + r));
    for (int64_t e = 0; e < 10; ++e) {
      want_mask.push_back(rng.uniform(static_cast<uint64_t>(e)) >= rate ? scale : 0.0f);
      want_y.push_back(x[r * 10 + e] * want_mask.back());
    }
  }
  size_t kept = 0;
  for (float m : want_mask) kept += m != 0.0f;
  CHECK(kept > 0);
  CHECK(kept < want_mask.size());
  for (const Device& d : devices()) {
    INFO(d.str());
    Tensor mask = Tensor::empty(x.shape(), DType::f32, d), y = Tensor::empty(x.shape(), DType::f32, d);
    ops::dropout(ops::Context{d, DType::f32}, x.to(d), key, 10, rate, mask, y);
    CHECK(mask.to_vector() == want_mask);
    CHECK(y.to_vector() == want_y);
  }
}

TEST_CASE("op attention_add_input_grads: dx += a + b, or dx += a without b") {
  // Tolerance 0: one or two float additions per element, in that order.
  const Tensor dx = values({2, 7}, 10, -1.0f, 1.0f), a = values({2, 7}, 11, -1.0f, 1.0f),
               b = values({2, 7}, 12, -1.0f, 1.0f);
  for (const Device& d : devices()) {
    INFO(d.str());
    const ops::Context ctx{d, DType::f32};
    Tensor both = dx.to(d).clone(), one = dx.to(d).clone();
    const Tensor bd = b.to(d);
    ops::attention_add_input_grads(ctx, both, a.to(d), &bd);
    ops::attention_add_input_grads(ctx, one, a.to(d), nullptr);
    const std::vector<float> got_both = both.to_vector(), got_one = one.to_vector();
    for (int64_t i = 0; i < 14; ++i) {
      CHECK(got_both[static_cast<size_t>(i)] == dx[i] + (a[i] + b[i]));
      CHECK(got_one[static_cast<size_t>(i)] == dx[i] + a[i]);
    }
  }
}

}  // namespace
}  // namespace dtrain
