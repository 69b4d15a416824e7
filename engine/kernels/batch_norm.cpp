// Batch normalization's CPU kernels (engine/kernels/batch_norm.hpp).
#include "engine/kernels/batch_norm.hpp"

#include <cmath>
#include <vector>

#include "engine/kernels/parallel.hpp"

namespace dtrain::kernels {

void batch_norm_sums(const float* x, int64_t rows, int64_t c, double* sum) {
  column_sums(rows, c, c, sum, [&](int64_t r, double* acc) {
    const float* row = x + r * c;
    for (int64_t j = 0; j < c; ++j) acc[j] += row[j];
  });
}

void batch_norm_squared_deviations(const float* x, const float* mean, int64_t rows, int64_t c, double* sq) {
  column_sums(rows, c, c, sq, [&](int64_t r, double* acc) {
    const float* row = x + r * c;
    for (int64_t j = 0; j < c; ++j) {
      const double d = static_cast<double>(row[j]) - mean[j];
      acc[j] += d * d;
    }
  });
}

void batch_norm_apply(const float* x, const float* gamma, const float* beta, float* moving_mean, float* moving_var,
                      const float* batch_mean, const float* batch_var, float momentum, float epsilon, int64_t rows,
                      int64_t c, float* mean_out, float* inv_std, float* y) {
  if (batch_mean != nullptr) {
    for (int64_t j = 0; j < c; ++j) {
      mean_out[j] = batch_mean[j];
      inv_std[j] = 1.0f / std::sqrt(batch_var[j] + epsilon);
      moving_mean[j] = momentum * moving_mean[j] + (1.0f - momentum) * batch_mean[j];
      moving_var[j] = momentum * moving_var[j] + (1.0f - momentum) * batch_var[j];
    }
  } else {
    for (int64_t j = 0; j < c; ++j) {
      mean_out[j] = moving_mean[j];
      inv_std[j] = 1.0f / std::sqrt(moving_var[j] + epsilon);
    }
  }
  // y = x * scale + shift, per channel.
  std::vector<float> scale_v(static_cast<size_t>(c)), shift_v(static_cast<size_t>(c));
  float* scale = scale_v.data();
  float* shift = shift_v.data();
  for (int64_t j = 0; j < c; ++j) {
    scale[j] = gamma[j] * inv_std[j];
    shift[j] = beta[j] - mean_out[j] * scale[j];
  }
  parallel_ranges(rows, c, [&](int64_t first, int64_t last) {
    for (int64_t r = first; r < last; ++r) {
      const float* in = x + r * c;
      float* out = y + r * c;
      for (int64_t j = 0; j < c; ++j) out[j] = in[j] * scale[j] + shift[j];
    }
  });
}

void batch_norm_param_grads(const float* x, const float* dy, const float* mean, const float* inv_std, int64_t rows,
                            int64_t c, double* sums, float* dgamma, float* dbeta) {
  column_sums(rows, c, 2 * c, sums, [&](int64_t r, double* acc) {
    const float* in = x + r * c;
    const float* gr = dy + r * c;
    double* db = acc;
    double* dg = acc + c;
    for (int64_t j = 0; j < c; ++j) {
      db[j] += gr[j];
      dg[j] += static_cast<double>(gr[j]) * ((in[j] - mean[j]) * inv_std[j]);
    }
  });
  for (int64_t j = 0; j < c; ++j) {
    dgamma[j] = static_cast<float>(sums[c + j]);
    dbeta[j] = static_cast<float>(sums[j]);
  }
}

void batch_norm_input_grad(const float* x, const float* dy, const float* gamma, const float* mean,
                           const float* inv_std, const double* sums, double total, bool batch_stats, int64_t rows,
                           int64_t c, float* dx) {
  std::vector<float> a_v(static_cast<size_t>(c)), mb_v(static_cast<size_t>(c)), mg_v(static_cast<size_t>(c));
  float* a = a_v.data();
  float* mb = mb_v.data();
  float* mg = mg_v.data();
  for (int64_t j = 0; j < c; ++j) {
    a[j] = gamma[j] * inv_std[j];
    mb[j] = batch_stats ? static_cast<float>(sums[j] / total) : 0.0f;
    mg[j] = batch_stats ? static_cast<float>(sums[c + j] / total) : 0.0f;
  }
  parallel_ranges(rows, c, [&](int64_t first, int64_t last) {
    for (int64_t r = first; r < last; ++r) {
      const float* in = x + r * c;
      const float* gr = dy + r * c;
      float* o = dx + r * c;
      for (int64_t j = 0; j < c; ++j) {
        const float xhat = (in[j] - mean[j]) * inv_std[j];
        o[j] = a[j] * (gr[j] - mb[j] - xhat * mg[j]);
      }
    }
  });
}

}  // namespace dtrain::kernels
