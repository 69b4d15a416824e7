// Histograms with TensorFlow's default buckets (engine/io/histogram.hpp).
#include "engine/io/histogram.hpp"

#include <algorithm>
#include <cfloat>
#include <cmath>

namespace dtrain {

const std::vector<double>& default_histogram_limits() {
  static const std::vector<double> kLimits = [] {
    std::vector<double> pos;
    for (double v = 1.0e-12; v < 1.0e20; v *= 1.1) pos.push_back(v);
    pos.push_back(DBL_MAX);
    std::vector<double> limits;
    limits.reserve(2 * pos.size() + 1);
    for (auto it = pos.rbegin(); it != pos.rend(); ++it) limits.push_back(-*it);
    limits.push_back(0.0);
    limits.insert(limits.end(), pos.begin(), pos.end());
    return limits;
  }();
  return kLimits;
}

Histogram make_histogram(std::span<const float> values) {
  const std::vector<double>& limits = default_histogram_limits();
  std::vector<double> counts(limits.size(), 0.0);
  Histogram h;
  h.min = DBL_MAX;
  h.max = -DBL_MAX;
  for (const float f : values) {
    if (!std::isfinite(f)) continue;
    const double v = f;
    // The bucket whose limit is the first above v (TF's upper_bound).
    const size_t b = static_cast<size_t>(std::upper_bound(limits.begin(), limits.end(), v) - limits.begin());
    counts[std::min(b, limits.size() - 1)] += 1;
    h.min = std::min(h.min, v);
    h.max = std::max(h.max, v);
    h.num += 1;
    h.sum += v;
    h.sum_squares += v * v;
  }
  if (h.num == 0) h.min = h.max = 0;
  for (size_t i = 0; i < counts.size();) {
    double end = limits[i];
    const double count = counts[i];
    ++i;
    if (count <= 0) {
      while (i < counts.size() && counts[i] <= 0) end = limits[i++];
    }
    h.bucket_limit.push_back(end);
    h.bucket.push_back(count);
  }
  return h;
}

}  // namespace dtrain
