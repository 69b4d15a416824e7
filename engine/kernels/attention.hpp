// Multi-head attention's own float32 loops (the products are matmuls; its
// dropout is kernels/dropout.hpp): the token-major <-> head-major permute, the
// masked softmax over score rows and its backward, and the sum of an input's
// gradients. Rows are split over the OpenMP team (kernels/parallel.hpp);
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

// dx[i] += a[i] + b[i] for i in [0, n) (dx[i] += a[i] when b is null): the
// gradients of one input that was the query, key and/or value summed.
void attention_add_input_grads(float* dx, const float* a, const float* b, int64_t n);

}  // namespace dtrain::kernels
