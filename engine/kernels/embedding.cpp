// Embedding and position embedding's CPU kernels (engine/kernels/embedding.hpp).
#include "engine/kernels/embedding.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

namespace dtrain::kernels {

int64_t embedding_row(int32_t id, int64_t rows) { return id >= 0 && id < rows ? id : -1; }

int64_t embedding_row(float id, int64_t rows) {
  const double v = id;
  // Written so that NaN fails every test.
  if (!(v >= 0.0 && v < static_cast<double>(rows) && v == std::floor(v))) return -1;
  return static_cast<int64_t>(v);
}

template <class Id>
void embedding_gather(const Id* ids, int64_t tokens, const float* table, int64_t rows, int64_t d, float* y) {
  for (int64_t t = 0; t < tokens; ++t) {
    const int64_t id = embedding_row(ids[t], rows);
    float* row = y + t * d;
    if (id < 0) {
      std::fill(row, row + d, std::numeric_limits<float>::quiet_NaN());
    } else {
      std::memcpy(row, table + id * d, static_cast<size_t>(d) * sizeof(float));
    }
  }
}

template <class Id>
void embedding_scatter_add(const Id* ids, int64_t tokens, const float* dy, int64_t rows, int64_t d, float* dtable) {
  std::fill(dtable, dtable + rows * d, 0.0f);
  for (int64_t t = 0; t < tokens; ++t) {
    const int64_t id = embedding_row(ids[t], rows);
    if (id < 0) continue;
    float* row = dtable + id * d;
    const float* gr = dy + t * d;
    for (int64_t j = 0; j < d; ++j) row[j] += gr[j];
  }
}

template void embedding_gather(const int32_t*, int64_t, const float*, int64_t, int64_t, float*);
template void embedding_gather(const float*, int64_t, const float*, int64_t, int64_t, float*);
template void embedding_scatter_add(const int32_t*, int64_t, const float*, int64_t, int64_t, float*);
template void embedding_scatter_add(const float*, int64_t, const float*, int64_t, int64_t, float*);

void position_embedding_forward(const float* x, const float* table, int64_t sequences, int64_t block, float* y) {
  for (int64_t s = 0; s < sequences; ++s) {
    const float* in = x + s * block;
    float* out = y + s * block;
    for (int64_t i = 0; i < block; ++i) out[i] = in[i] + table[i];
  }
}

void position_embedding_backward(const float* dy, int64_t sequences, int64_t block, int64_t table_size,
                                 float* dtable) {
  std::vector<double> sum(static_cast<size_t>(block), 0.0);
  for (int64_t s = 0; s < sequences; ++s) {
    const float* gs = dy + s * block;
    for (int64_t i = 0; i < block; ++i) sum[static_cast<size_t>(i)] += gs[i];
  }
  for (int64_t i = 0; i < block; ++i) dtable[i] = static_cast<float>(sum[static_cast<size_t>(i)]);
  std::fill(dtable + block, dtable + table_size, 0.0f);
}

}  // namespace dtrain::kernels
