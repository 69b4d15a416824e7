// Histograms of tensor values for TensorBoard's Histograms and Distributions
// tabs, bucketed as TensorFlow's tf.summary.histogram (v1) does
// (tensorflow/core/lib/histogram/histogram.cc): 1551 bucket limits,
// -DBL_MAX, -1e20 .. -1e-12 and 0, 1e-12 .. 1e20 growing by 1.1, DBL_MAX;
// runs of empty buckets are collapsed into one, as TF's EncodeToProto does.
#pragma once

#include <span>
#include <vector>

namespace dtrain {

struct Histogram {
  double min = 0, max = 0;  // of the values counted (0, 0 when none)
  double num = 0;           // values counted
  double sum = 0, sum_squares = 0;
  // Parallel arrays: bucket[i] counts the values in [bucket_limit[i-1],
  // bucket_limit[i]) (from -DBL_MAX for i = 0). Empty buckets between
  // non-empty ones are merged into the next limit; sum(bucket) == num.
  std::vector<double> bucket_limit, bucket;
};

// The default bucket limits above, ascending, shared (built once, thread-safe).
const std::vector<double>& default_histogram_limits();

// The histogram of the finite values of `values`; NaN and infinities are
// left out (num counts the rest). O(n) after a table lookup.
Histogram make_histogram(std::span<const float> values);

}  // namespace dtrain
