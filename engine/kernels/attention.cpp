// Multi-head attention's CPU kernels (engine/kernels/attention.hpp).
#include "engine/kernels/attention.hpp"

#include <algorithm>

#include "engine/kernels/parallel.hpp"
#include "engine/kernels/softmax.hpp"

namespace dtrain::kernels {

void attention_permute_heads(const float* src, float* dst, int64_t b, int64_t t, int64_t h, int64_t d, float scale,
                             bool to_heads) {
  // One item per (example, position): h rows of d elements.
  parallel_ranges(b * t, h * d, [&](int64_t first, int64_t last) {
    for (int64_t nt = first; nt < last; ++nt) {
      const int64_t n = nt / t, i = nt % t;
      for (int64_t k = 0; k < h; ++k) {
        const int64_t tok = (nt * h + k) * d, head = ((n * h + k) * t + i) * d;
        const float* from = src + (to_heads ? tok : head);
        float* to = dst + (to_heads ? head : tok);
        for (int64_t e = 0; e < d; ++e) to[e] = scale * from[e];
      }
    }
  });
}

void attention_softmax_rows(float* p, int64_t rows, int64_t tq, int64_t tk, bool causal) {
  parallel_ranges(rows, tk, [&](int64_t first, int64_t last) {
    for (int64_t r = first; r < last; ++r) {
      float* row = p + r * tk;
      softmax_row(row, row, causal ? std::min(tk, r % tq + 1) : tk, tk);
    }
  });
}

void attention_softmax_backward(const float* p, const float* mask, float* g, int64_t rows, int64_t tk) {
  parallel_ranges(rows, tk, [&](int64_t first, int64_t last) {
    for (int64_t r = first; r < last; ++r) {
      float* gr = g + r * tk;
      if (mask != nullptr) {
        for (int64_t j = 0; j < tk; ++j) gr[j] *= mask[r * tk + j];
      }
      softmax_backward_row(p + r * tk, gr, gr, tk);
    }
  });
}

void attention_add_input_grads(float* dx, const float* a, const float* b, int64_t n) {
  parallel_ranges(n, 1, [&](int64_t first, int64_t last) {
    if (b != nullptr) {
      for (int64_t i = first; i < last; ++i) dx[i] += a[i] + b[i];
    } else {
      for (int64_t i = first; i < last; ++i) dx[i] += a[i];
    }
  });
}

}  // namespace dtrain::kernels
