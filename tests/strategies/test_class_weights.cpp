// Example weights (strategies/class_weights.hpp): class weights resolved
// against the loss and output, each example's class as the weights read it,
// balanced weights as scikit-learn's compute_class_weight("balanced")
// (values computed by hand from its formula n / (k * count)), and the
// product with the data's weights in training only.
#include <doctest.h>

#include <vector>

#include "strategies/class_weights.hpp"

namespace dtrain {
namespace {

ClassWeightSpec explicit_weights(std::vector<std::pair<int64_t, double>> w) {
  ClassWeightSpec s;
  s.weights = std::move(w);
  return s;
}

TEST_CASE("class weights: explicit weights fill the classes listed, the others weigh 1") {
  auto w = make_class_weights(explicit_weights({{2, 10.0}, {0, 0.5}}), LossKind::kSparseSoftmaxCrossEntropy,
                              Shape{4}, "job.yaml:3:3: model.class_weight");
  REQUIRE(w.ok());
  CHECK(w->classes == 4);
  CHECK(w->per_class == std::vector<float>{0.5f, 1.0f, 10.0f, 1.0f});
  auto sigmoid = make_class_weights(explicit_weights({{1, 3.0}}), LossKind::kSigmoidCrossEntropy, Shape{1}, "at");
  REQUIRE(sigmoid.ok());
  CHECK(sigmoid->per_class == std::vector<float>{1.0f, 3.0f});
}

TEST_CASE("class weights: outputs without one class per example and unknown classes are config errors") {
  const ClassWeightSpec one = explicit_weights({{1, 2.0}});
  auto mse = make_class_weights(one, LossKind::kMeanSquaredError, Shape{3}, "at");
  REQUIRE(!mse.ok());
  CHECK(mse.error().kind == ErrorKind::kConfig);
  CHECK(mse.error().message.find("need a classification loss") != std::string::npos);
  auto sequence = make_class_weights(one, LossKind::kSparseSoftmaxCrossEntropy, Shape{7, 5}, "at");
  REQUIRE(!sequence.ok());
  CHECK(sequence.error().message.find("has 7 positions per example") != std::string::npos);
  auto multi_label = make_class_weights(one, LossKind::kSigmoidCrossEntropy, Shape{4}, "at");
  REQUIRE(!multi_label.ok());
  CHECK(multi_label.error().message.find("has 4 units (multi-label)") != std::string::npos);
  auto outside = make_class_weights(explicit_weights({{3, 2.0}}), LossKind::kSoftmaxCrossEntropy, Shape{3}, "at");
  REQUIRE(!outside.ok());
  CHECK(outside.error().message == "at: class 3 is not a class of the output [3] (classes 0..2)");
  auto none = make_class_weights(ClassWeightSpec{}, LossKind::kMeanSquaredError, Shape{3}, "at");
  REQUIRE(none.ok());  // not given: nothing to check
  CHECK(!none->active());
}

TEST_CASE("class weights: each example's class by the loss") {
  ClassWeights sparse{LossKind::kSparseSoftmaxCrossEntropy, 3, false, {}, ""};
  CHECK(example_classes(sparse, Tensor::from({4}, {2, 0, 3, 1.5f})) == std::vector<int64_t>{2, 0, -1, -1});
  ClassWeights softmax{LossKind::kSoftmaxCrossEntropy, 3, false, {}, ""};
  CHECK(example_classes(softmax, Tensor::from({2, 3}, {0.1f, 0.7f, 0.2f, 0.5f, 0.5f, 0})) ==
        std::vector<int64_t>{1, 0});  // the first largest, as argmax
  ClassWeights sigmoid{LossKind::kSigmoidCrossEntropy, 2, false, {}, ""};
  CHECK(example_classes(sigmoid, Tensor::from({3, 1}, {0, 1, 0.75f})) == std::vector<int64_t>{0, 1, 1});
}

TEST_CASE("class weights: balanced is n / (classes present x count), absent classes weigh 1") {
  // y = 90 x 0, 8 x 1, 2 x 2: n = 100, k = 3.
  const std::vector<float> w = balanced_class_weights({90, 8, 2});
  CHECK(w[0] == static_cast<float>(100.0 / 270.0));
  CHECK(w[1] == static_cast<float>(100.0 / 24.0));
  CHECK(w[2] == static_cast<float>(100.0 / 6.0));
  // A class absent from the data: k counts the two present.
  CHECK(balanced_class_weights({30, 0, 10}) ==
        std::vector<float>{static_cast<float>(40.0 / 60.0), 1.0f, static_cast<float>(40.0 / 20.0)});
}

TEST_CASE("class weights: a shard's weights are class weights (training only) times the data's") {
  ClassWeights w{LossKind::kSparseSoftmaxCrossEntropy, 3, false, {1.0f, 4.0f, 10.0f}, ""};
  const Tensor labels = Tensor::from({4}, {0, 1, 2, 1});
  const Tensor data = Tensor::from({4}, {0.5f, 2.0f, 1.0f, 0.0f});
  CHECK(example_weights(w, labels, Tensor(), true).to_vector() == std::vector<float>{1, 4, 10, 4});
  CHECK(example_weights(w, labels, data, true).to_vector() == std::vector<float>{0.5f, 8, 10, 0});
  CHECK(example_weights(w, labels, data, false).to_vector() == std::vector<float>{0.5f, 2, 1, 0});
  CHECK(example_weights(w, labels, Tensor(), false).empty());  // evaluation without data weights: none
  CHECK(example_weights(ClassWeights{}, labels, Tensor(), true).empty());
}

}  // namespace
}  // namespace dtrain
