// Global pooling's CPU kernels (engine/kernels/global_pool.hpp).
#include "engine/kernels/global_pool.hpp"

#include <algorithm>
#include <vector>

namespace dtrain::kernels {

void global_pool_forward(const float* x, int64_t batch, int64_t p, int64_t c, bool max, float* y) {
  std::vector<double> sum(static_cast<size_t>(c));
  for (int64_t b = 0; b < batch; ++b) {
    const float* in = x + b * p * c;
    float* out = y + b * c;
    if (max) {
      std::copy(in, in + c, out);
      for (int64_t i = 1; i < p; ++i) {
        const float* row = in + i * c;
        for (int64_t j = 0; j < c; ++j) out[j] = row[j] > out[j] ? row[j] : out[j];
      }
      continue;
    }
    std::fill(sum.begin(), sum.end(), 0.0);
    for (int64_t i = 0; i < p; ++i) {
      const float* row = in + i * c;
      for (int64_t j = 0; j < c; ++j) sum[static_cast<size_t>(j)] += row[j];
    }
    for (int64_t j = 0; j < c; ++j) out[j] = static_cast<float>(sum[static_cast<size_t>(j)] / static_cast<double>(p));
  }
}

void global_pool_backward(const float* x, const float* dy, int64_t batch, int64_t p, int64_t c, bool max, float* dx) {
  const float inv = 1.0f / static_cast<float>(p);
  std::vector<int64_t> arg(static_cast<size_t>(c));
  for (int64_t b = 0; b < batch; ++b) {
    const float* in = x + b * p * c;
    const float* gb = dy + b * c;
    float* ob = dx + b * p * c;
    if (!max) {
      for (int64_t i = 0; i < p; ++i) {
        for (int64_t j = 0; j < c; ++j) ob[i * c + j] = gb[j] * inv;
      }
      continue;
    }
    std::fill(arg.begin(), arg.end(), 0);
    for (int64_t i = 1; i < p; ++i) {
      const float* row = in + i * c;
      for (int64_t j = 0; j < c; ++j) {
        if (row[j] > in[arg[static_cast<size_t>(j)] * c + j]) arg[static_cast<size_t>(j)] = i;
      }
    }
    std::fill(ob, ob + p * c, 0.0f);
    for (int64_t j = 0; j < c; ++j) ob[arg[static_cast<size_t>(j)] * c + j] = gb[j];
  }
}

}  // namespace dtrain::kernels
