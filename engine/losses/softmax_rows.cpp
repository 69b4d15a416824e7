// softmax_last_dim: the softmax losses' predictions.
#include "engine/losses/softmax_rows.hpp"

#include "engine/kernels/losses.hpp"

namespace dtrain {

Tensor softmax_last_dim(const Tensor& logits) {
  Tensor out(logits.shape());
  const int64_t c = logits.rank() == 0 ? 1 : logits.dim(-1);
  const int64_t rows = c == 0 ? 0 : logits.numel() / c;
  for (int64_t i = 0; i < rows; ++i) {
    const float* row = logits.data() + i * c;
    kernels::softmax_from_lse(row, kernels::log_sum_exp(row, c), 1.0f, out.data() + i * c, c);
  }
  return out;
}

}  // namespace dtrain
