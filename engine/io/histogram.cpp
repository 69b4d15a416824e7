// Histograms with TensorFlow's default buckets (engine/io/histogram.hpp).
#include "engine/io/histogram.hpp"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>

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

namespace {

// Where to start looking for a float's bucket: floats are split into 4096
// cells by their top 12 bits (sign, exponent, 3 mantissa bits), each cell
// spanning a factor of at most 1.125 in magnitude, so at most two limits
// (which grow by 1.1) fall inside one. kStart[c] is upper_bound(limits, the
// cell's lowest value): a value of the cell is at most two limits further.
// About 2 ns a value where a binary search over 1551 limits takes 35.
constexpr int kCellShift = 20;
constexpr size_t kCells = size_t{1} << (32 - kCellShift);

uint32_t float_bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

const std::vector<uint16_t>& start_table() {
  static const std::vector<uint16_t> kStart = [] {
    const std::vector<double>& limits = default_histogram_limits();
    std::vector<uint16_t> start(kCells);
    for (size_t c = 0; c < kCells; ++c) {
      const uint32_t first = static_cast<uint32_t>(c << kCellShift);
      // Positive cells grow with their bits; negative ones shrink, so their
      // lowest value has the largest magnitude.
      const uint32_t lowest_bits = (first & 0x80000000u) ? (first | ((1u << kCellShift) - 1)) : first;
      float lowest;
      std::memcpy(&lowest, &lowest_bits, sizeof lowest);
      if (!std::isfinite(lowest)) lowest = (first & 0x80000000u) ? -FLT_MAX : FLT_MAX;  // never looked up
      start[c] = static_cast<uint16_t>(std::upper_bound(limits.begin(), limits.end(), double{lowest}) - limits.begin());
    }
    return start;
  }();
  return kStart;
}

}  // namespace

Histogram make_histogram(std::span<const float> values) {
  const std::vector<double>& limits = default_histogram_limits();
  const std::vector<uint16_t>& start = start_table();
  std::vector<double> counts(limits.size(), 0.0);
  Histogram h;
  h.min = DBL_MAX;
  h.max = -DBL_MAX;
  for (const float f : values) {
    if (!std::isfinite(f)) continue;
    const double v = f;
    // The bucket whose limit is the first above v (TF's upper_bound); the
    // last limit, DBL_MAX, is above every float.
    size_t b = start[float_bits(f) >> kCellShift];
    while (limits[b] <= v) ++b;
    counts[b] += 1;
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
