// Tests for engine/metrics: the make_metric table and its errors, results
// against the NumPy reference (reference/metrics.json), and that metric state
// is additive: the states of two half-batches sum to the whole batch's state.
#include <doctest.h>

#include <random>
#include <vector>

#include "engine/losses/loss.hpp"
#include "engine/metrics/metric.hpp"
#include "tests/engine/losses/test_reference.hpp"

namespace dtrain {
namespace {

std::unique_ptr<Metric> metric_named(const std::string& name, const std::string& loss) {
  Result<std::unique_ptr<Metric>> r = make_metric(name, loss);
  REQUIRE_MESSAGE(r.ok(), (r.ok() ? "" : r.error().message));
  return std::move(r.value());
}

std::string error_of(const std::string& name, const std::string& loss) {
  Result<std::unique_ptr<Metric>> r = make_metric(name, loss);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().kind == ErrorKind::kConfig);
  return r.error().message;
}

Shape without_batch(const Shape& s) { return Shape(s.begin() + 1, s.end()); }

TEST_CASE("make_metric names and errors") {
  CHECK(metric_named("accuracy", "sparse_softmax_cross_entropy")->name() == "accuracy");
  CHECK(metric_named("mean_loss", "mean_squared_error")->name() == "mean_loss");
  CHECK(metric_named("precision", "sigmoid_cross_entropy")->name() == "precision");
  CHECK(metric_named("recall", "softmax_cross_entropy")->name() == "recall");
  CHECK(metric_named("mean_absolute_error", "mean_squared_error")->name() == "mean_absolute_error");

  CHECK(error_of("acuracy", "sparse_softmax_cross_entropy") ==
        "metric \"acuracy\" is not one of accuracy, mean_loss, precision, recall, mean_absolute_error "
        "(did you mean \"accuracy\"?)");
  CHECK(error_of("auc", "sparse_softmax_cross_entropy") ==
        "metric \"auc\" is not one of accuracy, mean_loss, precision, recall, mean_absolute_error");
  CHECK(error_of("accuracy", "mean_squared_error") ==
        "accuracy is not defined for mean_squared_error; use mean_absolute_error");
  CHECK(error_of("precision", "mean_squared_error") ==
        "precision is not defined for mean_squared_error; use mean_absolute_error");
  CHECK(error_of("recall", "mean_squared_error") ==
        "recall is not defined for mean_squared_error; use mean_absolute_error");
  CHECK(error_of("mean_absolute_error", "sparse_softmax_cross_entropy") ==
        "mean_absolute_error is not defined for sparse_softmax_cross_entropy; use accuracy");
  CHECK(error_of("accuracy", "mse") ==
        "loss \"mse\" is not one of sparse_softmax_cross_entropy, softmax_cross_entropy, sigmoid_cross_entropy, "
        "mean_squared_error");
}

TEST_CASE("metric results match the NumPy reference") {
  const nlohmann::json ref = testing::load_reference("tests/engine/metrics/reference/metrics.json");
  REQUIRE(ref["cases"].size() >= 18);
  for (const auto& c : ref["cases"]) {
    const std::string name = c["metric"], loss = c["loss"];
    CAPTURE(name);
    CAPTURE(loss);
    auto metric = metric_named(name, loss);
    const Shape out = without_batch(c["batches"][0]["logits_shape"].get<Shape>());
    std::vector<double> state(metric->state_size(out), 0.0);
    for (const auto& b : c["batches"]) {
      metric->update(testing::tensor_from_json(b["logits_shape"], b["logits"]),
                     testing::tensor_from_json(b["labels_shape"], b["labels"]), b["loss_sum"].get<double>(), state);
    }
    CHECK(metric->result(state) == doctest::Approx(c["result"].get<double>()).epsilon(1e-6));
  }
}

TEST_CASE("precision and recall keep per-class counts for softmax losses") {
  CHECK(metric_named("precision", "sparse_softmax_cross_entropy")->state_size({10}) == 30);
  CHECK(metric_named("recall", "softmax_cross_entropy")->state_size({4}) == 12);
  CHECK(metric_named("precision", "sigmoid_cross_entropy")->state_size({1}) == 3);
  // Class 2 is never predicted and class 1 never present: precision averages
  // classes 0 and 1 (1/1 and 0/1), recall classes 0 and 2 (1/1 and 0/1).
  auto precision = metric_named("precision", "sparse_softmax_cross_entropy");
  auto recall = metric_named("recall", "sparse_softmax_cross_entropy");
  const Tensor logits = Tensor::from({2, 3}, {5, 0, 0, 0, 5, 0});
  const Tensor labels = Tensor::from({2}, {0, 2});
  std::vector<double> ps(9, 0.0), rs(9, 0.0);
  precision->update(logits, labels, 0.0, ps);
  recall->update(logits, labels, 0.0, rs);
  CHECK(precision->result(ps) == doctest::Approx(0.5));
  CHECK(recall->result(rs) == doctest::Approx(0.5));
}

TEST_CASE("an empty metric state gives 0") {
  for (const char* name : {"accuracy", "mean_loss", "precision", "recall", "mean_absolute_error"}) {
    auto metric = metric_named(name, "sigmoid_cross_entropy");
    std::vector<double> state(metric->state_size({2}), 0.0);
    CHECK(metric->result(state) == 0.0);
  }
}

// Labels for `loss` matching logits (B, C).
Tensor random_labels(const std::string& loss, int64_t b, int64_t c, std::mt19937& gen) {
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  if (loss == "sparse_softmax_cross_entropy") {
    Tensor y(Shape{b});
    for (int64_t i = 0; i < b; ++i) y[i] = static_cast<float>(gen() % static_cast<uint32_t>(c));
    return y;
  }
  Tensor y(Shape{b, c});
  for (int64_t i = 0; i < y.numel(); ++i) y[i] = loss == "softmax_cross_entropy" ? unit(gen) : 2.0f * unit(gen) - 0.5f;
  return y;
}

TEST_CASE("summing the states of two half-batches gives the state of the whole batch") {
  const std::vector<std::pair<std::string, std::vector<std::string>>> plan = {
      {"accuracy", {"sparse_softmax_cross_entropy", "softmax_cross_entropy", "sigmoid_cross_entropy"}},
      {"mean_loss",
       {"sparse_softmax_cross_entropy", "softmax_cross_entropy", "sigmoid_cross_entropy", "mean_squared_error"}},
      {"precision", {"sparse_softmax_cross_entropy", "softmax_cross_entropy", "sigmoid_cross_entropy"}},
      {"recall", {"sparse_softmax_cross_entropy", "softmax_cross_entropy", "sigmoid_cross_entropy"}},
      {"mean_absolute_error", {"softmax_cross_entropy", "sigmoid_cross_entropy", "mean_squared_error"}},
  };
  std::mt19937 gen(11);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  const int64_t b = 13, c = 4;
  for (const auto& entry : plan) {
    const std::string& name = entry.first;
    const auto& losses = entry.second;
    for (const std::string& loss_name : losses) {
      CAPTURE(name);
      CAPTURE(loss_name);
      auto metric = metric_named(name, loss_name);
      Result<std::unique_ptr<Loss>> loss = make_loss(loss_name);
      REQUIRE(loss.ok());
      Tensor x(Shape{b, c});
      for (int64_t i = 0; i < x.numel(); ++i) x[i] = normal(gen);
      const Tensor y = random_labels(loss_name, b, c, gen);
      const size_t n = metric->state_size({c});
      std::vector<double> whole(n, 0.0), halves(n, 0.0), second(n, 0.0);
      metric->update(x, y, (*loss)->forward_backward(x, y, nullptr, 1.0f), whole);
      const int64_t split = 6;
      const Tensor x1 = x.rows(0, split), y1 = y.rows(0, split), x2 = x.rows(split, b), y2 = y.rows(split, b);
      metric->update(x1, y1, (*loss)->forward_backward(x1, y1, nullptr, 1.0f), halves);
      metric->update(x2, y2, (*loss)->forward_backward(x2, y2, nullptr, 1.0f), second);
      for (size_t k = 0; k < n; ++k) {
        halves[k] += second[k];
        CHECK(halves[k] == doctest::Approx(whole[k]).epsilon(1e-12));
      }
      CHECK(metric->result(halves) == doctest::Approx(metric->result(whole)).epsilon(1e-12));
      CHECK(metric->result(whole) > 0.0);
    }
  }
}

TEST_CASE("integer example weights count each example as that many copies of it") {
  // Keras' sample_weight: a metric over examples with integer weights equals
  // the same metric over the batch with each example repeated w times (0:
  // left out). The loss passed is the weighted sum, as the loss gives it.
  const std::vector<std::pair<std::string, std::vector<std::string>>> plan = {
      {"accuracy", {"sparse_softmax_cross_entropy", "softmax_cross_entropy", "sigmoid_cross_entropy"}},
      {"precision", {"sparse_softmax_cross_entropy", "softmax_cross_entropy", "sigmoid_cross_entropy"}},
      {"recall", {"sparse_softmax_cross_entropy", "softmax_cross_entropy", "sigmoid_cross_entropy"}},
      {"mean_absolute_error", {"softmax_cross_entropy", "sigmoid_cross_entropy", "mean_squared_error"}},
  };
  std::mt19937 gen(5);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  const int64_t b = 11, c = 4;
  const std::vector<float> w = {1, 3, 0, 2, 1, 1, 4, 0, 2, 1, 3};
  for (const auto& [name, losses] : plan) {
    for (const std::string& loss_name : losses) {
      INFO(name << " with " << loss_name);
      auto metric = metric_named(name, loss_name);
      Tensor x(Shape{b, c});
      for (int64_t i = 0; i < x.numel(); ++i) x[i] = normal(gen);
      const Tensor y = random_labels(loss_name, b, c, gen);
      std::vector<int64_t> repeated;
      for (int64_t i = 0; i < b; ++i) {
        for (int k = 0; k < static_cast<int>(w[static_cast<size_t>(i)]); ++k) repeated.push_back(i);
      }
      Tensor xr(Shape{static_cast<int64_t>(repeated.size()), c});
      Tensor yr(Shape{static_cast<int64_t>(repeated.size()), y.numel() / b});
      for (size_t r = 0; r < repeated.size(); ++r) {
        for (int64_t j = 0; j < c; ++j) xr[static_cast<int64_t>(r) * c + j] = x[repeated[r] * c + j];
        const int64_t per = y.numel() / b;
        for (int64_t j = 0; j < per; ++j) yr[static_cast<int64_t>(r) * per + j] = y[repeated[r] * per + j];
      }
      const Tensor yr_shaped = y.rank() == 1 ? yr.reshaped({static_cast<int64_t>(repeated.size())}) : yr;
      const size_t n = metric->state_size({c});
      std::vector<double> weighted(n, 0.0), copies(n, 0.0), plain(n, 0.0);
      metric->update(x, y, 0.0, weighted, w.data());
      metric->update(xr, yr_shaped, 0.0, copies);
      metric->update(x, y, 0.0, plain);
      CHECK(metric->result(weighted) == doctest::Approx(metric->result(copies)).epsilon(1e-12));
      CHECK(metric->result(weighted) != doctest::Approx(metric->result(plain)).epsilon(1e-9));
    }
  }
}

}  // namespace
}  // namespace dtrain
