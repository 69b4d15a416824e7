// check_labels: class ids must be integers in [0, classes).
#include "engine/losses/label_check.hpp"

#include <fmt/format.h>

#include <cmath>

namespace dtrain {

Status check_labels(const Tensor& labels, const Shape& output,
                    const std::function<std::string(int64_t example)>& example_place) {
  const int64_t classes = output.empty() ? 1 : output.back();
  const int64_t b = labels.rank() == 0 ? 1 : labels.dim(0);
  const int64_t per_example = b == 0 ? 1 : labels.numel() / b;
  auto where = [&](int64_t i) {
    const std::string example =
        example_place ? example_place(i / per_example) : fmt::format("example {}", i / per_example);
    return per_example == 1 ? example : fmt::format("{}, position {}", example, i % per_example);
  };
  const std::string ids = example_place ? fmt::format(" (class ids are 0..{})", classes - 1) : "";
  const float* y = labels.data();
  for (int64_t i = 0; i < labels.numel(); ++i) {
    const float v = y[i];
    if (!std::isfinite(v) || v != std::floor(v)) {
      return data_error(fmt::format("label {} at {} is not an integer class id", v, where(i)));
    }
    if (v < 0.0f || v >= static_cast<float>(classes)) {
      return data_error(fmt::format("label {} at {} is out of range for {} classes{}", v, where(i), classes, ids));
    }
  }
  return Status::Ok();
}

}  // namespace dtrain
