// Validation of class-id labels for sparse_softmax_cross_entropy. The loss
// itself never reads out of bounds on a bad label (it yields NaN instead);
// the estimator calls check_labels on each batch so the user gets a data error.
#pragma once

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
// within the example, row-major).
Status check_labels(const Tensor& labels, const Shape& output);

}  // namespace dtrain
