// Multi-head attention's own float32 loops (the products are matmuls): the
// token-major <-> head-major permute, the masked softmax over score rows and
// its backward. Rows are split over the OpenMP team (kernels/parallel.hpp);
// each row is computed alone, so results do not depend on the thread count.
#pragma once

#include <cstdint>

namespace dtrain::kernels {

// heads (B, H, T, D) = scale * tokens (B, T, H, D) when `to_heads`, else
// tokens = scale * heads. src and dst do not overlap.
void attention_permute_heads(const float* src, float* dst, int64_t b, int64_t t, int64_t h, int64_t d, float scale,
                             bool to_heads);

// In place over `rows` rows of `tk` scores: softmax. Row r is query position
// r % tq; with `causal` it keeps keys j <= that position (the others get 0).
void attention_softmax_rows(float* p, int64_t rows, int64_t tq, int64_t tk, bool causal);

// In place over `rows` rows of `tk`: g, the gradient of the probabilities
// after dropout, becomes the gradient of the scores. With d = g * mask (g when
// mask is null), dS_j = P_j (d_j - sum_k d_k P_k); masked keys have P = 0, so dS = 0.
void attention_softmax_backward(const float* p, const float* mask, float* g, int64_t rows, int64_t tk);

}  // namespace dtrain::kernels
