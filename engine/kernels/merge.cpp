// The merge layers' CPU kernels (engine/kernels/merge.hpp).
#include "engine/kernels/merge.hpp"

#include <cstring>

#include "engine/kernels/parallel.hpp"

namespace dtrain::kernels {

namespace {

// Merge's input gradients at elements [first, last).
void merge_backward_range(MergeOp op, const float* const* xs, size_t k, const float* dy, float* const* dxs,
                          int64_t first, int64_t last) {
  const int64_t n = last - first;
  const float* g = dy + first;
  for (size_t i = 0; i < k; ++i) {
    if (dxs[i] == nullptr) continue;
    float* out = dxs[i] + first;
    switch (op) {
      case MergeOp::kAdd:
        std::memcpy(out, g, static_cast<size_t>(n) * sizeof(float));
        break;
      case MergeOp::kSubtract: {
        const float sign = i == 0 ? 1.0f : -1.0f;
        for (int64_t e = 0; e < n; ++e) out[e] = sign * g[e];
        break;
      }
      case MergeOp::kAverage: {
        const float inv = 1.0f / static_cast<float>(k);
        for (int64_t e = 0; e < n; ++e) out[e] = g[e] * inv;
        break;
      }
      case MergeOp::kMultiply:
        // d/dx_i prod_j x_j = prod_{j != i} x_j, in input order.
        std::memcpy(out, g, static_cast<size_t>(n) * sizeof(float));
        for (size_t j = 0; j < k; ++j) {
          if (j == i) continue;
          const float* x = xs[j] + first;
          for (int64_t e = 0; e < n; ++e) out[e] *= x[e];
        }
        break;
      case MergeOp::kMaximum:
        // The gradient goes to the first input holding the maximum.
        for (int64_t e = first; e < last; ++e) {
          size_t arg = 0;
          float best = xs[0][e];
          for (size_t j = 1; j < k; ++j) {
            const float v = xs[j][e];
            if (v > best) {
              best = v;
              arg = j;
            }
          }
          out[e - first] = arg == i ? g[e - first] : 0.0f;
        }
        break;
    }
  }
}

}  // namespace

void merge_forward(MergeOp op, const float* const* xs, size_t k, int64_t n, float* y) {
  parallel_ranges(n, static_cast<int64_t>(k), [&](int64_t first, int64_t last) {
    const int64_t m = last - first;
    float* out = y + first;
    std::memcpy(out, xs[0] + first, static_cast<size_t>(m) * sizeof(float));
    for (size_t i = 1; i < k; ++i) {
      const float* x = xs[i] + first;
      switch (op) {
        case MergeOp::kAdd:
        case MergeOp::kAverage:
          for (int64_t e = 0; e < m; ++e) out[e] += x[e];
          break;
        case MergeOp::kSubtract:
          for (int64_t e = 0; e < m; ++e) out[e] -= x[e];
          break;
        case MergeOp::kMultiply:
          for (int64_t e = 0; e < m; ++e) out[e] *= x[e];
          break;
        case MergeOp::kMaximum:
          for (int64_t e = 0; e < m; ++e) out[e] = x[e] > out[e] ? x[e] : out[e];
          break;
      }
    }
    if (op == MergeOp::kAverage) {
      const float inv = 1.0f / static_cast<float>(k);
      for (int64_t e = 0; e < m; ++e) out[e] *= inv;
    }
  });
}

void merge_backward(MergeOp op, const float* const* xs, size_t k, const float* dy, float* const* dxs, int64_t n) {
  parallel_ranges(n, static_cast<int64_t>(k),
                  [&](int64_t first, int64_t last) { merge_backward_range(op, xs, k, dy, dxs, first, last); });
}

void concatenate_forward(const float* const* xs, const int64_t* widths, size_t k, int64_t outer, float* y) {
  int64_t out_width = 0;
  for (size_t i = 0; i < k; ++i) out_width += widths[i];
  for (int64_t o = 0; o < outer; ++o) {
    int64_t at = o * out_width;
    for (size_t i = 0; i < k; ++i) {
      std::memcpy(y + at, xs[i] + o * widths[i], static_cast<size_t>(widths[i]) * sizeof(float));
      at += widths[i];
    }
  }
}

void concatenate_backward(const float* dy, const int64_t* widths, size_t k, int64_t outer, float* const* dxs) {
  int64_t out_width = 0;
  for (size_t i = 0; i < k; ++i) out_width += widths[i];
  for (int64_t o = 0; o < outer; ++o) {
    int64_t at = o * out_width;
    for (size_t i = 0; i < k; ++i) {
      if (dxs[i] != nullptr) {
        std::memcpy(dxs[i] + o * widths[i], dy + at, static_cast<size_t>(widths[i]) * sizeof(float));
      }
      at += widths[i];
    }
  }
}

}  // namespace dtrain::kernels
