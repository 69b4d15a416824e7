// Tests for engine/losses: the make_loss table, shape checks, values and
// gradients against the PyTorch reference (reference/losses.json), and
// central-difference gradient checks for every loss.
#include <doctest.h>

#include <cmath>
#include <random>

#include "engine/losses/loss.hpp"
#include "tests/engine/losses/test_reference.hpp"

namespace dtrain {
namespace {

std::unique_ptr<Loss> loss_named(const std::string& name) {
  Result<std::unique_ptr<Loss>> r = make_loss(name);
  REQUIRE(r.ok());
  return std::move(r.value());
}

// Random logits and matching valid labels/targets for `name`.
void random_batch(const std::string& name, const Shape& logits_shape, uint32_t seed, Tensor& x, Tensor& y) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> normal(0.0f, 1.5f);
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  x = Tensor(logits_shape);
  for (int64_t i = 0; i < x.numel(); ++i) x[i] = normal(gen);
  const int64_t b = logits_shape[0];
  const int64_t c = x.numel() / b;
  if (name == "sparse_softmax_cross_entropy") {
    // Labels (B, positions...): the logits' shape without the classes dimension.
    const int64_t classes = logits_shape.back();
    y = Tensor(Shape(logits_shape.begin(), logits_shape.end() - 1));
    for (int64_t i = 0; i < y.numel(); ++i) y[i] = static_cast<float>(gen() % static_cast<uint32_t>(classes));
  } else if (name == "softmax_cross_entropy") {
    y = Tensor(logits_shape);
    for (int64_t i = 0; i < b; ++i) {
      float sum = 0.0f;
      for (int64_t j = 0; j < c; ++j) sum += (y[i * c + j] = unit(gen));
      for (int64_t j = 0; j < c; ++j) y[i * c + j] /= sum;
    }
  } else if (name == "sigmoid_cross_entropy") {
    y = Tensor(logits_shape);
    for (int64_t i = 0; i < y.numel(); ++i) y[i] = unit(gen);
  } else {
    y = Tensor(logits_shape);
    for (int64_t i = 0; i < y.numel(); ++i) y[i] = normal(gen);
  }
}

TEST_CASE("make_loss builds every loss by name") {
  for (const char* name : {"sparse_softmax_cross_entropy", "softmax_cross_entropy", "sigmoid_cross_entropy",
                           "mean_squared_error"}) {
    CHECK(loss_named(name)->name() == name);
  }
}

TEST_CASE("make_loss rejects unknown names with the full message") {
  Result<std::unique_ptr<Loss>> typo = make_loss("sparse_softmax_crossentropy");
  REQUIRE_FALSE(typo.ok());
  CHECK(typo.error().kind == ErrorKind::kConfig);
  CHECK(typo.error().message ==
        "loss \"sparse_softmax_crossentropy\" is not one of sparse_softmax_cross_entropy, softmax_cross_entropy, "
        "sigmoid_cross_entropy, mean_squared_error (did you mean \"sparse_softmax_cross_entropy\"?)");
  Result<std::unique_ptr<Loss>> far = make_loss("hinge");
  REQUIRE_FALSE(far.ok());
  CHECK(far.error().message ==
        "loss \"hinge\" is not one of sparse_softmax_cross_entropy, softmax_cross_entropy, sigmoid_cross_entropy, "
        "mean_squared_error");
}

TEST_CASE("loss shape checks accept the documented shapes and explain the rest") {
  auto sparse = loss_named("sparse_softmax_cross_entropy");
  CHECK(sparse->check_shapes({10}, {}).ok());
  CHECK(sparse->check_shapes({10}, {1}).ok());
  // Sequence outputs (T, C) and (H, W, C): labels without the classes dimension, or with a trailing 1.
  CHECK(sparse->check_shapes({4, 5}, {4}).ok());
  CHECK(sparse->check_shapes({4, 5}, {4, 1}).ok());
  CHECK(sparse->check_shapes({2, 3, 5}, {2, 3}).ok());
  Status bad = sparse->check_shapes({4, 5}, {3});
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().kind == ErrorKind::kConfig);
  CHECK(bad.error().message ==
        "sparse_softmax_cross_entropy: labels [3] do not fit model output [4, 5]: class-id labels have the output's "
        "shape without its last (classes) dimension ([4]); labels [3] need a model output [3, classes]");
  Status flat = sparse->check_shapes({10}, {64});
  REQUIRE_FALSE(flat.ok());
  CHECK(flat.error().message ==
        "sparse_softmax_cross_entropy: labels [64] do not fit model output [10]: class-id labels have the output's "
        "shape without its last (classes) dimension ([]); labels [64] need a model output [64, classes]");
  Status empty = sparse->check_shapes({6, 10}, {});
  REQUIRE_FALSE(empty.ok());
  CHECK(empty.error().message ==
        "sparse_softmax_cross_entropy: labels [] do not fit model output [6, 10]: class-id labels have the output's "
        "shape without its last (classes) dimension ([6]); labels [] need a model output [classes]");
  Status scalar = sparse->check_shapes({}, {});
  REQUIRE_FALSE(scalar.ok());
  CHECK(scalar.error().message ==
        "sparse_softmax_cross_entropy needs a model output with a classes dimension, (..., classes); got output []");

  auto dense = loss_named("softmax_cross_entropy");
  CHECK(dense->check_shapes({10}, {10}).ok());
  Status ids = dense->check_shapes({10}, {});
  REQUIRE_FALSE(ids.ok());
  CHECK(ids.error().message ==
        "softmax_cross_entropy needs model output (classes) and targets of the same shape; got output [10] and "
        "labels [] (for class-id labels use sparse_softmax_cross_entropy)");
  Status mismatch = dense->check_shapes({10}, {9});
  REQUIRE_FALSE(mismatch.ok());
  CHECK(mismatch.error().message ==
        "softmax_cross_entropy needs model output (classes) and targets of the same shape; got output [10] and "
        "labels [9]");

  for (const char* name : {"sigmoid_cross_entropy", "mean_squared_error"}) {
    auto loss = loss_named(name);
    CHECK(loss->check_shapes({3, 4}, {3, 4}).ok());
    CHECK(loss->check_shapes({1}, {}).ok());
    Status s = loss->check_shapes({3}, {2});
    REQUIRE_FALSE(s.ok());
    CHECK(s.error().message == std::string(name) + " needs targets of the model output's shape; got output [3] and labels [2]");
  }
}

TEST_CASE("loss values, gradients and predictions match the PyTorch reference") {
  const nlohmann::json ref = testing::load_reference("tests/engine/losses/reference/losses.json");
  REQUIRE(ref["cases"].size() >= 10);
  for (const auto& c : ref["cases"]) {
    const std::string name = c["loss"];
    CAPTURE(name);
    auto loss = loss_named(name);
    const Tensor x = testing::tensor_from_json(c["logits_shape"], c["logits"]);
    const Tensor y = testing::tensor_from_json(c["labels_shape"], c["labels"]);
    const float scale = c["grad_scale"].get<float>();
    Tensor dx;
    const double got = loss->forward_backward(x, y, &dx, scale);
    const double want = c["loss_sum"];
    CHECK(got == doctest::Approx(want).epsilon(1e-5));
    CHECK(dx.shape() == x.shape());
    testing::check_all_close(dx, c["dlogits"], 1e-4, 1e-6, name + " dlogits");
    testing::check_all_close(loss->predictions(x), c["predictions"], 1e-5, 1e-7, name + " predictions");
    // Without a gradient tensor the loss is the same.
    CHECK(loss->forward_backward(x, y, nullptr, scale) == got);
  }
}

// Central differences of the float32 loss, in double, against the analytic gradient.
void gradient_check(const std::string& name, const Shape& shape, float grad_scale, uint32_t seed) {
  CAPTURE(name);
  CAPTURE(shape_str(shape));
  auto loss = loss_named(name);
  Tensor x, y;
  random_batch(name, shape, seed, x, y);
  Tensor dx;
  loss->forward_backward(x, y, &dx, grad_scale);
  double max_abs = 0.0;
  for (int64_t i = 0; i < dx.numel(); ++i) max_abs = std::max(max_abs, std::fabs(static_cast<double>(dx[i])));
  REQUIRE(max_abs > 0.0);
  for (int64_t i = 0; i < x.numel(); ++i) {
    const float orig = x[i];
    const float hi = orig + 1e-2f, lo = orig - 1e-2f;
    x[i] = hi;
    const double up = loss->forward_backward(x, y, nullptr, 1.0f);
    x[i] = lo;
    const double down = loss->forward_backward(x, y, nullptr, 1.0f);
    x[i] = orig;
    const double numeric = grad_scale * (up - down) / (static_cast<double>(hi) - static_cast<double>(lo));
    const double analytic = dx[i];
    CHECK_MESSAGE(std::fabs(numeric - analytic) <= 1e-2 * max_abs + 1e-2 * std::fabs(numeric),
                  "element " << i << ": numeric " << numeric << " analytic " << analytic);
  }
}

TEST_CASE("every loss passes a finite-difference gradient check") {
  uint32_t seed = 7;
  for (const char* name : {"sparse_softmax_cross_entropy", "softmax_cross_entropy"}) {
    gradient_check(name, {1, 2}, 1.0f, ++seed);
    gradient_check(name, {4, 7}, 0.25f, ++seed);
    gradient_check(name, {9, 3}, 3.0f, ++seed);
  }
  // Sequence outputs (B, T, C) and (B, H, W, C): the mean over positions.
  gradient_check("sparse_softmax_cross_entropy", {3, 4, 5}, 1.0f / 3.0f, ++seed);
  gradient_check("sparse_softmax_cross_entropy", {2, 2, 3, 4}, 2.0f, ++seed);
  for (const char* name : {"sigmoid_cross_entropy", "mean_squared_error"}) {
    gradient_check(name, {1, 1}, 1.0f, ++seed);
    gradient_check(name, {5, 3}, 0.2f, ++seed);
    gradient_check(name, {2, 3, 2, 2}, 2.5f, ++seed);
  }
}

// The sequence loss is the per-example mean over positions: (B, T, C) gives
// 1/T of the loss of the same rows as a (B*T, C) batch, and its gradient
// 1/T of theirs, whatever the batch is split into.
TEST_CASE("sparse_softmax_cross_entropy over (B, T, C) averages each example over its positions") {
  auto loss = loss_named("sparse_softmax_cross_entropy");
  Tensor x, y;
  random_batch("sparse_softmax_cross_entropy", {4, 6, 5}, 99, x, y);
  const Tensor rows = x.reshaped({24, 5}), row_labels = y.reshaped({24});
  Tensor dx, drows;
  const double seq = loss->forward_backward(x, y, &dx, 0.5f);
  const double flat = loss->forward_backward(rows, row_labels, &drows, 0.5f);
  CHECK(seq == doctest::Approx(flat / 6.0).epsilon(1e-12));
  for (int64_t i = 0; i < dx.numel(); ++i) CHECK(dx[i] == doctest::Approx(drows[i] / 6.0f).epsilon(1e-6));
  // Split into examples 0..0 and 1..3 (as replicas do): the sums add up.
  const double a = loss->forward_backward(x.rows(0, 1), y.rows(0, 1), nullptr, 1.0f);
  const double b = loss->forward_backward(x.rows(1, 4), y.rows(1, 4), nullptr, 1.0f);
  CHECK(a + b == doctest::Approx(seq).epsilon(1e-12));
  // Labels (B, T, 1) read the same.
  CHECK(loss->forward_backward(x, y.reshaped({4, 6, 1}), nullptr, 0.5f) == seq);
}

TEST_CASE("dlogits is reallocated only when its shape differs") {
  auto loss = loss_named("mean_squared_error");
  const Tensor x = Tensor::from({2, 2}, {1.0f, 2.0f, 3.0f, 4.0f});
  const Tensor y(Shape{2, 2});
  Tensor dx(Shape{3});
  loss->forward_backward(x, y, &dx, 1.0f);
  CHECK(dx.shape() == Shape{2, 2});
  const float* storage = dx.data();
  loss->forward_backward(x, y, &dx, 1.0f);
  CHECK(dx.data() == storage);
  CHECK(dx[3] == doctest::Approx(2.0f * 4.0f / 2.0f));
}

TEST_CASE("an empty batch has zero loss") {
  for (const char* name : {"sparse_softmax_cross_entropy", "softmax_cross_entropy", "sigmoid_cross_entropy",
                           "mean_squared_error"}) {
    auto loss = loss_named(name);
    const bool sparse = std::string(name) == "sparse_softmax_cross_entropy";
    Tensor dx;
    CHECK(loss->forward_backward(Tensor(Shape{0, 3}), Tensor(sparse ? Shape{0} : Shape{0, 3}), &dx, 1.0f) == 0.0);
    CHECK(dx.shape() == Shape{0, 3});
  }
}

TEST_CASE("sparse_softmax_cross_entropy turns a bad label into NaN without reading out of bounds") {
  auto loss = loss_named("sparse_softmax_cross_entropy");
  const Tensor x = Tensor::from({2, 3}, {0.1f, 0.2f, 0.3f, 1.0f, 2.0f, 3.0f});
  for (float bad : {3.0f, -1.0f, 1.5f, std::nanf("")}) {
    CAPTURE(bad);
    Tensor dx;
    const double l = loss->forward_backward(x, Tensor::from({2}, {0.0f, bad}), &dx, 1.0f);
    CHECK(std::isnan(l));
    CHECK(std::isfinite(dx[0]));
    CHECK(std::isnan(dx[3]));
  }
}

}  // namespace
}  // namespace dtrain
