// Validation of class-id labels for sparse_softmax_cross_entropy. The loss
// itself never reads out of bounds on a bad label (it yields NaN instead);
// the estimator calls check_labels on each batch so the user gets a data error.
#pragma once

#include <functional>
#include <string>

#include "engine/base/status.hpp"
#include "engine/tensor.hpp"

namespace dtrain {

// labels: (B, P...) or (B, P..., 1) class ids stored as floats; output: the
// model output shape without batch, (P..., C), whose last dimension is the
// number of classes C. Returns OK when every label is an integer in [0, C);
// otherwise a kData error for the first bad one, e.g. "label 12 at example 5
// is out of range for 10 classes" or "label 2.5 at example 0 is not an
// integer class id", with ", position 7" after the example when examples
// have several labels (examples count from 0 within this batch, positions
// within the example, row-major). `example_place`, when given, names
// example i in place of "example i" (e.g. "train.csv:12:5 (column \"y\")",
// from the input that read it), and the range message says which ids are
// classes ("... out of range for 10 classes (class ids are 0..9)").
Status check_labels(const Tensor& labels, const Shape& output,
                    const std::function<std::string(int64_t example)>& example_place = nullptr);

}  // namespace dtrain
