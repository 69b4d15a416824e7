// One small case per op of the losses, of multi_head_attention's dropout and
// gradient sums and of the layers' loops (embeddings, merges, padding,
// activations; ops/loss_ops.hpp, ops/layer_ops.hpp), on every backend
// present (cpu and debug), each against an independent computation written
// here from the op's contract, with a tolerance per op (ggml's
// test-backend-ops). The CPU kernels sum in double in the order the references
// below use, so the losses' sums agree to double rounding; the float32
// gradients to float rounding of exp and log.
#include <doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "engine/ops/layer_ops.hpp"
#include "engine/ops/loss_ops.hpp"
#include "engine/rng.hpp"
#include "tests/engine/backend/seeded_tensor.hpp"

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
  return test::seeded_tensor(shape, seed, lo, hi);
}

using LossOp = double (*)(const ops::Context&, const Tensor&, const Tensor&, float, Tensor*, const Tensor*);

// Runs `op` on every device; CHECKs its sum against want (relative) and its
// gradient against want_grad (absolute), and that without dlogits the sum is the same.
void check_loss(const char* name, LossOp op, const Tensor& logits, const Tensor& labels, float grad_scale,
                double want, const std::vector<double>& want_grad, OpTolerance tol) {
  for (const Device& d : devices()) {
    INFO(fmt::format("{} on {}", name, d.str()));
    const ops::Context ctx{d, DType::f32};
    Tensor grad = Tensor::empty(logits.shape(), DType::f32, d);
    const double got = op(ctx, logits.to(d), labels.to(d), grad_scale, &grad, nullptr);
    CHECK(std::fabs(got - want) <= tol.value * std::fabs(want));
    const std::vector<float> g = grad.to_vector();
    REQUIRE(g.size() == want_grad.size());
    for (size_t i = 0; i < g.size(); ++i) {
      INFO("gradient element " << i << ": " << g[i] << " want " << want_grad[i]);
      CHECK(std::fabs(g[i] - want_grad[i]) <= tol.grad);
    }
    CHECK(op(ctx, logits.to(d), labels.to(d), grad_scale, nullptr, nullptr) == got);
    // Example weights: example i's loss and gradient row are w_i times its
    // own (computed alone, unweighted), a weight of 1 changes nothing, and
    // a weight of 0 leaves a zero row.
    const int64_t b = logits.dim(0), per = logits.numel() / b;
    std::vector<float> w(static_cast<size_t>(b));
    for (int64_t i = 0; i < b; ++i) w[static_cast<size_t>(i)] = i == 0 ? 0.0f : 0.5f + 0.75f * static_cast<float>(i);
    const Tensor weights = Tensor::from(Shape{b}, w).to(d);
    Tensor wgrad = Tensor::empty(logits.shape(), DType::f32, d);
    const double weighted = op(ctx, logits.to(d), labels.to(d), grad_scale, &wgrad, &weights);
    const std::vector<float> wg = wgrad.to_vector();
    double want_weighted = 0.0;
    for (int64_t i = 0; i < b; ++i) {
      Tensor row_grad = Tensor::empty(logits.rows(i, i + 1).shape(), DType::f32, d);
      const double one = op(ctx, logits.rows(i, i + 1).to(d), labels.rows(i, i + 1).to(d), grad_scale, &row_grad, nullptr);
      want_weighted += static_cast<double>(w[static_cast<size_t>(i)]) * one;
      const std::vector<float> rg = row_grad.to_vector();
      for (int64_t k = 0; k < per; ++k) {
        INFO("weighted gradient of example " << i << ", element " << k);
        CHECK(std::fabs(wg[static_cast<size_t>(i * per + k)] - w[static_cast<size_t>(i)] * rg[static_cast<size_t>(k)]) <=
              1e-6f * std::fabs(rg[static_cast<size_t>(k)]) + 1e-12f);
      }
    }
    CHECK(std::fabs(weighted - want_weighted) <= 1e-12 * std::fabs(want_weighted));
    const Tensor ones = Tensor::from(Shape{b}, std::vector<float>(static_cast<size_t>(b), 1.0f)).to(d);
    Tensor grad1 = Tensor::empty(logits.shape(), DType::f32, d);
    CHECK(op(ctx, logits.to(d), labels.to(d), grad_scale, &grad1, &ones) == got);
    CHECK(grad1.to_vector() == g);
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

// The layers' loops. Copies, selects and one float operation per element are
// exact (tolerance 0); sums and products of several inputs, exp, tanh and erf
// are checked against double references within a float rounding or a few.
constexpr double kExact = 0.0, kFloatSum = 1e-6, kTranscendental = 2e-6;

// CHECKs got against want element by element within tol (absolute; the
// values here are O(1)), NaN only where want is NaN.
void check_values(const std::string& what, const std::vector<float>& got, const std::vector<double>& want, double tol) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO(what << " element " << i << ": " << got[i] << " want " << want[i]);
    if (std::isnan(want[i])) {
      CHECK(std::isnan(got[i]));
    } else {
      CHECK(std::fabs(got[i] - want[i]) <= tol);
    }
  }
}

TEST_CASE("op embedding: rows gathered by id, NaN for a bad id; backward sums dy's rows into the rows picked") {
  // A table of 4 rows of 3; ids 2, 0, 2, 7 (out of range), 1.5 (not an
  // integer: int32 makes it 1), 3, as float32 and as int32.
  const Tensor table = values({4, 3}, 13, -1.0f, 1.0f), dy = values({2, 3, 3}, 14, -1.0f, 1.0f);
  const std::vector<float> id_values{2, 0, 2, 7, 1.5f, 3};
  Tensor int_ids = Tensor::empty({2, 3}, DType::i32, kHost);
  for (size_t i = 0; i < id_values.size(); ++i) int_ids.host_data<int32_t>()[i] = static_cast<int32_t>(id_values[i]);
  const std::vector<int64_t> float_rows{2, 0, 2, -1, -1, 3}, int_rows{2, 0, 2, -1, 1, 3};
  for (const Device& d : devices()) {
    const ops::Context ctx{d, DType::f32};
    for (const Tensor& ids : {Tensor::from({2, 3}, id_values), int_ids}) {
      INFO(d.str() << (ids.dtype() == DType::i32 ? " int32 ids" : " float ids"));
      const std::vector<int64_t>& rows = ids.dtype() == DType::i32 ? int_rows : float_rows;
      std::vector<double> want_y, want_dtable(12, 0.0);
      for (size_t t = 0; t < 6; ++t) {
        for (int64_t j = 0; j < 3; ++j) {
          const int64_t r = rows[t];
          want_y.push_back(r >= 0 ? double{table[r * 3 + j]} : std::numeric_limits<double>::quiet_NaN());
          if (r >= 0) want_dtable[static_cast<size_t>(r * 3 + j)] += dy[static_cast<int64_t>(t) * 3 + j];
        }
      }
      Tensor y = Tensor::empty({2, 3, 3}, DType::f32, d), dtable = Tensor::empty({4, 3}, DType::f32, d),
             dids = Tensor::empty({2, 3}, DType::f32, d);
      ops::embedding_forward(ctx, ids.to(d), table.to(d), y);
      ops::embedding_backward(ctx, ids.to(d), dy.to(d), dtable, &dids);
      check_values("y", y.to_vector(), want_y, kExact);
      check_values("dtable", dtable.to_vector(), want_dtable, kFloatSum);
      check_values("dids", dids.to_vector(), std::vector<double>(6, 0.0), kExact);
    }
  }
}

TEST_CASE("op position_embedding: x + table[step]; backward sums dy over the sequences, 0 in later rows") {
  // 2 sequences of 3 steps of 2 channels against a table of 5 rows.
  const Tensor x = values({2, 3, 2}, 15, -1.0f, 1.0f), table = values({5, 2}, 16, -1.0f, 1.0f),
               dy = values({2, 3, 2}, 17, -1.0f, 1.0f);
  std::vector<double> want_y, want_dtable(10, 0.0);
  for (int64_t i = 0; i < 12; ++i) {
    want_y.push_back(double{x[i]} + table[i % 6]);
    want_dtable[static_cast<size_t>(i % 6)] += dy[i];
  }
  for (const Device& d : devices()) {
    INFO(d.str());
    const ops::Context ctx{d, DType::f32};
    Tensor y = Tensor::empty(x.shape(), DType::f32, d), dtable = Tensor::empty({5, 2}, DType::f32, d);
    ops::position_embedding_forward(ctx, x.to(d), table.to(d), y);
    ops::position_embedding_backward(ctx, dy.to(d), dtable);
    check_values("y", y.to_vector(), want_y, kFloatSum);
    check_values("dtable", dtable.to_vector(), want_dtable, kFloatSum);
  }
}

TEST_CASE("op merge: add, subtract, multiply, average and maximum of the inputs, and their gradients") {
  using kernels::MergeOp;
  Tensor a = values({2, 5}, 18, -1.0f, 1.0f), b = values({2, 5}, 19, -1.0f, 1.0f), c = values({2, 5}, 20, -1.0f, 1.0f);
  b[3] = a[3];  // a tie: the maximum's gradient goes to the first input holding it
  const Tensor dy = values({2, 5}, 21, -1.0f, 1.0f);
  const std::vector<const Tensor*> host{&a, &b, &c};
  for (MergeOp op : {MergeOp::kAdd, MergeOp::kSubtract, MergeOp::kMultiply, MergeOp::kAverage, MergeOp::kMaximum}) {
    const size_t k = op == MergeOp::kSubtract ? 2 : 3;
    std::vector<double> want_y;
    std::vector<std::vector<double>> want_dx(k);
    for (int64_t e = 0; e < 10; ++e) {
      std::vector<double> v;
      for (size_t i = 0; i < k; ++i) v.push_back((*host[i])[e]);
      const size_t arg = static_cast<size_t>(std::max_element(v.begin(), v.end()) - v.begin());  // the first maximum
      double y = v[0], prod = 1;
      for (size_t i = 1; i < k; ++i) y = op == MergeOp::kSubtract ? y - v[i] : y + v[i];
      for (double x : v) prod *= x;
      if (op == MergeOp::kAverage) y /= static_cast<double>(k);
      if (op == MergeOp::kMultiply) y = prod;
      if (op == MergeOp::kMaximum) y = v[arg];
      want_y.push_back(y);
      for (size_t i = 0; i < k; ++i) {
        double g = dy[e];
        if (op == MergeOp::kSubtract && i == 1) g = -g;
        if (op == MergeOp::kAverage) g /= static_cast<double>(k);
        if (op == MergeOp::kMultiply) g *= prod / v[i];
        if (op == MergeOp::kMaximum && i != arg) g = 0;
        want_dx[i].push_back(g);
      }
    }
    for (const Device& d : devices()) {
      INFO(d.str() << " merge op " << static_cast<int>(op));
      const ops::Context ctx{d, DType::f32};
      std::vector<Tensor> xs, dxs;
      std::vector<const Tensor*> xp;
      std::vector<Tensor*> dxp;
      for (size_t i = 0; i < k; ++i) {
        xs.push_back(host[i]->to(d));
        dxs.push_back(Tensor::empty({2, 5}, DType::f32, d));
      }
      for (size_t i = 0; i < k; ++i) {
        xp.push_back(&xs[i]);
        dxp.push_back(i == 1 ? nullptr : &dxs[i]);  // an input without a gradient is skipped
      }
      Tensor y = Tensor::empty({2, 5}, DType::f32, d);
      ops::merge_forward(ctx, op, xp, y);
      ops::merge_backward(ctx, op, xp, dy.to(d), dxp);
      check_values("y", y.to_vector(), want_y, kFloatSum);
      for (size_t i = 0; i < k; ++i) {
        if (i != 1) check_values(fmt::format("dx{}", i), dxs[i].to_vector(), want_dx[i], kFloatSum);
      }
    }
  }
}

TEST_CASE("op concatenate: inputs side by side along the axis; backward hands each its columns of dy") {
  // (2, 2, 3) and (2, 1, 3) along axis 1: widths 6 and 3 per outer index.
  const Tensor a = values({2, 2, 3}, 22, -1.0f, 1.0f), b = values({2, 1, 3}, 23, -1.0f, 1.0f),
               dy = values({2, 3, 3}, 24, -1.0f, 1.0f);
  const std::vector<int64_t> widths{6, 3};
  std::vector<double> want_y, want_da, want_db;
  for (int64_t o = 0; o < 2; ++o) {
    for (int64_t j = 0; j < 6; ++j) want_y.push_back(a[o * 6 + j]);
    for (int64_t j = 0; j < 3; ++j) want_y.push_back(b[o * 3 + j]);
    for (int64_t j = 0; j < 6; ++j) want_da.push_back(dy[o * 9 + j]);
    for (int64_t j = 0; j < 3; ++j) want_db.push_back(dy[o * 9 + 6 + j]);
  }
  for (const Device& d : devices()) {
    INFO(d.str());
    const ops::Context ctx{d, DType::f32};
    const Tensor ad = a.to(d), bd = b.to(d);
    Tensor y = Tensor::empty({2, 3, 3}, DType::f32, d), da = Tensor::empty(a.shape(), DType::f32, d),
           db = Tensor::empty(b.shape(), DType::f32, d);
    const std::vector<const Tensor*> xs{&ad, &bd};
    ops::concatenate_forward(ctx, xs, widths, y);
    check_values("y", y.to_vector(), want_y, kExact);
    const std::vector<Tensor*> both{&da, &db}, second{nullptr, &db};
    ops::concatenate_backward(ctx, dy.to(d), widths, both);
    check_values("da", da.to_vector(), want_da, kExact);
    check_values("db", db.to_vector(), want_db, kExact);
    db = Tensor::zeros(b.shape(), DType::f32, d);
    ops::concatenate_backward(ctx, dy.to(d), widths, second);
    check_values("db alone", db.to_vector(), want_db, kExact);
  }
}

TEST_CASE("op pad: zero_pad2d frames the image with zeros; its backward crops the middle of dy") {
  // (2, 2, 3, 2) padded by 1 row and 2 columns each side: (2, 4, 7, 2).
  const Tensor x = values({2, 2, 3, 2}, 25, -1.0f, 1.0f), dy = values({2, 4, 7, 2}, 26, -1.0f, 1.0f);
  std::vector<double> want_y, want_dx;
  for (int64_t b = 0; b < 2; ++b) {
    for (int64_t h = 0; h < 4; ++h) {
      for (int64_t w = 0; w < 7; ++w) {
        const bool inside = h >= 1 && h < 3 && w >= 2 && w < 5;
        for (int64_t c = 0; c < 2; ++c) {
          want_y.push_back(inside ? x[((b * 2 + h - 1) * 3 + w - 2) * 2 + c] : 0.0);
          if (inside) want_dx.push_back(dy[((b * 4 + h) * 7 + w) * 2 + c]);
        }
      }
    }
  }
  for (const Device& d : devices()) {
    INFO(d.str());
    const ops::Context ctx{d, DType::f32};
    Tensor y = Tensor::empty(dy.shape(), DType::f32, d), dx = Tensor::empty(x.shape(), DType::f32, d);
    ops::zero_pad2d(ctx, x.to(d), 1, 2, y);
    ops::zero_pad2d_backward(ctx, dy.to(d), 1, 2, dx);
    check_values("y", y.to_vector(), want_y, kExact);
    check_values("dx", dx.to_vector(), want_dx, kExact);
  }
}

TEST_CASE("op activation: relu, softmax over the last dimension, gelu, tanh and sigmoid, and their backwards") {
  const Tensor x = values({3, 4}, 27, -3.0f, 3.0f), dy = values({3, 4}, 28, -1.0f, 1.0f);
  for (const Device& d : devices()) {
    INFO(d.str());
    const ops::Context ctx{d, DType::f32};
    const Tensor xd = x.to(d), dyd = dy.to(d);
    Tensor y = Tensor::empty(x.shape(), DType::f32, d), dx = Tensor::empty(x.shape(), DType::f32, d);
    std::vector<double> want_y, want_dx;

    // relu: exact selects (backward from y).
    ops::relu_forward(ctx, xd, y);
    ops::relu_backward(ctx, y, dyd, dx);
    for (int64_t i = 0; i < 12; ++i) {
      want_y.push_back(x[i] > 0 ? x[i] : 0.0);
      want_dx.push_back(x[i] > 0 ? dy[i] : 0.0);
    }
    check_values("relu y", y.to_vector(), want_y, kExact);
    check_values("relu dx", dx.to_vector(), want_dx, kExact);

    // softmax per row of 4; dx = y (dy - sum(dy y)).
    want_y.clear();
    want_dx.clear();
    for (int64_t r = 0; r < 3; ++r) {
      const std::vector<double> ls = log_softmax(x.data() + r * 4, 4);
      double dot = 0;
      for (int64_t j = 0; j < 4; ++j) dot += dy[r * 4 + j] * std::exp(ls[static_cast<size_t>(j)]);
      for (int64_t j = 0; j < 4; ++j) {
        const double p = std::exp(ls[static_cast<size_t>(j)]);
        want_y.push_back(p);
        want_dx.push_back(p * (dy[r * 4 + j] - dot));
      }
    }
    ops::softmax_forward(ctx, xd, y);
    ops::softmax_backward(ctx, y, dyd, dx);
    check_values("softmax y", y.to_vector(), want_y, kTranscendental);
    check_values("softmax dx", dx.to_vector(), want_dx, kTranscendental);

    // gelu x Phi(x) (backward from x), tanh and sigmoid (backward from y).
    struct Fn {
      kernels::EltwiseKind kind;
      const char* name;
      double (*f)(double);
      double (*df)(double);  // f'(x)
    };
    const Fn fns[] = {
        {kernels::EltwiseKind::kGelu, "gelu", [](double v) { return v * 0.5 * std::erfc(-v / std::sqrt(2.0)); },
         [](double v) {
           return 0.5 * std::erfc(-v / std::sqrt(2.0)) + v * std::exp(-v * v / 2) / std::sqrt(2 * 3.14159265358979323846);
         }},
        {kernels::EltwiseKind::kTanh, "tanh", [](double v) { return std::tanh(v); },
         [](double v) { return 1 - std::tanh(v) * std::tanh(v); }},
        {kernels::EltwiseKind::kSigmoid, "sigmoid", [](double v) { return 1 / (1 + std::exp(-v)); },
         [](double v) { return std::exp(-v) / ((1 + std::exp(-v)) * (1 + std::exp(-v))); }},
    };
    for (const Fn& fn : fns) {
      want_y.clear();
      want_dx.clear();
      for (int64_t i = 0; i < 12; ++i) {
        want_y.push_back(fn.f(x[i]));
        want_dx.push_back(dy[i] * fn.df(x[i]));
      }
      ops::eltwise_forward(ctx, fn.kind, xd, y);
      ops::eltwise_backward(ctx, fn.kind, fn.kind == kernels::EltwiseKind::kGelu ? xd : y, dyd, dx);
      check_values(fmt::format("{} y", fn.name), y.to_vector(), want_y, kTranscendental);
      check_values(fmt::format("{} dx", fn.name), dx.to_vector(), want_dx, kTranscendental);
    }
  }
}

TEST_CASE("op leaky_relu: x or slope x, and dy or slope dy, by the sign of x") {
  // Tolerance 0: one float multiply per element, as the reference.
  const Tensor x = values({2, 6}, 29, -2.0f, 2.0f), dy = values({2, 6}, 30, -1.0f, 1.0f);
  const float slope = 0.3f;
  std::vector<double> want_y, want_dx;
  for (int64_t i = 0; i < 12; ++i) {
    want_y.push_back(x[i] > 0 ? x[i] : slope * x[i]);
    want_dx.push_back(x[i] > 0 ? dy[i] : slope * dy[i]);
  }
  for (const Device& d : devices()) {
    INFO(d.str());
    const ops::Context ctx{d, DType::f32};
    Tensor y = Tensor::empty(x.shape(), DType::f32, d), dx = Tensor::empty(x.shape(), DType::f32, d);
    ops::leaky_relu_forward(ctx, x.to(d), slope, y);
    ops::leaky_relu_backward(ctx, x.to(d), dy.to(d), slope, dx);
    check_values("y", y.to_vector(), want_y, kExact);
    check_values("dx", dx.to_vector(), want_dx, kExact);
  }
}

}  // namespace
}  // namespace dtrain
