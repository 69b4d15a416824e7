// Tests for check_labels (engine/losses/label_check.hpp): pinned data errors.
#include <doctest.h>

#include <cmath>

#include "engine/losses/label_check.hpp"

namespace dtrain {
namespace {

TEST_CASE("check_labels accepts class ids in range") {
  CHECK(check_labels(Tensor::from({4}, {0.0f, 9.0f, 3.0f, 0.0f}), {10}).ok());
  CHECK(check_labels(Tensor::from({2, 1}, {1.0f, 0.0f}), {2}).ok());
  CHECK(check_labels(Tensor(Shape{0}), {10}).ok());
}

TEST_CASE("check_labels names the first bad label and its example") {
  Status high = check_labels(Tensor::from({7}, {0, 1, 2, 3, 4, 12, 13}), {10});
  REQUIRE_FALSE(high.ok());
  CHECK(high.error().kind == ErrorKind::kData);
  CHECK(high.error().message == "label 12 at example 5 is out of range for 10 classes");

  Status negative = check_labels(Tensor::from({2}, {-1.0f, 0.0f}), {3});
  REQUIRE_FALSE(negative.ok());
  CHECK(negative.error().message == "label -1 at example 0 is out of range for 3 classes");

  Status fraction = check_labels(Tensor::from({2}, {1.0f, 2.5f}), {3});
  REQUIRE_FALSE(fraction.ok());
  CHECK(fraction.error().message == "label 2.5 at example 1 is not an integer class id");

  Status nan = check_labels(Tensor::from({1}, {std::nanf("")}), {3});
  REQUIRE_FALSE(nan.ok());
  CHECK(nan.error().message == "label nan at example 0 is not an integer class id");
}

TEST_CASE("check_labels names the example and position of a bad label of a sequence") {
  // Labels (B=2, T=3) for output (T=3, C=4).
  CHECK(check_labels(Tensor::from({2, 3}, {0, 1, 2, 3, 3, 0}), {3, 4}).ok());
  Status high = check_labels(Tensor::from({2, 3}, {0, 1, 2, 3, 4, 0}), {3, 4});
  REQUIRE_FALSE(high.ok());
  CHECK(high.error().kind == ErrorKind::kData);
  CHECK(high.error().message == "label 4 at example 1, position 1 is out of range for 4 classes");
  Status fraction = check_labels(Tensor::from({2, 2, 1}, {0, 0.5f, 0, 0}), {2, 4});
  REQUIRE_FALSE(fraction.ok());
  CHECK(fraction.error().message == "label 0.5 at example 0, position 1 is not an integer class id");
}

}  // namespace
}  // namespace dtrain
