// Batch normalization's CPU kernels (engine/kernels/batch_norm.hpp): plain
// loops over a range of rows, compiled for x86-64-v4 (AVX-512), x86-64-v3
// (AVX2) and the baseline and picked once by cpu_isa() (DTRAIN_MAX_CPU_ISA
// caps it). Each channel's sum runs over the rows in order in every clone,
// and the project builds with -ffp-contract=off, so every clone gives the
// same bits (only the channels go in parallel lanes).
#include "engine/kernels/batch_norm.hpp"

#include <cmath>
#include <vector>

#include "engine/cpu_isa.hpp"
#include "engine/kernels/parallel.hpp"


namespace dtrain::kernels {

namespace {

[[gnu::always_inline]] inline void sums_body(const float* x, int64_t r0, int64_t r1, int64_t c, double* acc) {
  for (int64_t r = r0; r < r1; ++r) {
    const float* row = x + r * c;
    for (int64_t j = 0; j < c; ++j) acc[j] += row[j];
  }
}

[[gnu::always_inline]] inline void sqdev_body(const float* x, const float* mean, int64_t r0, int64_t r1, int64_t c,
                                              double* acc) {
  for (int64_t r = r0; r < r1; ++r) {
    const float* row = x + r * c;
    for (int64_t j = 0; j < c; ++j) {
      const double d = static_cast<double>(row[j]) - mean[j];
      acc[j] += d * d;
    }
  }
}

[[gnu::always_inline]] inline void apply_body(const float* x, const float* scale, const float* shift, int64_t r0,
                                              int64_t r1, int64_t c, float* y) {
  for (int64_t r = r0; r < r1; ++r) {
    const float* in = x + r * c;
    float* out = y + r * c;
    for (int64_t j = 0; j < c; ++j) out[j] = in[j] * scale[j] + shift[j];
  }
}

[[gnu::always_inline]] inline void param_body(const float* x, const float* dy, const float* mean,
                                              const float* inv_std, int64_t r0, int64_t r1, int64_t c, double* acc) {
  double* db = acc;
  double* dg = acc + c;
  for (int64_t r = r0; r < r1; ++r) {
    const float* in = x + r * c;
    const float* gr = dy + r * c;
    for (int64_t j = 0; j < c; ++j) {
      db[j] += gr[j];
      dg[j] += static_cast<double>(gr[j]) * ((in[j] - mean[j]) * inv_std[j]);
    }
  }
}

struct InputGradCoeffs {
  const float* mean;
  const float* inv_std;
  const float* a;   // gamma * inv_std
  const float* mb;  // dbeta / N
  const float* mg;  // dgamma / N
};

[[gnu::always_inline]] inline void input_grad_body(const float* x, const float* dy, const InputGradCoeffs& k,
                                                   int64_t r0, int64_t r1, int64_t c, float* dx) {
  for (int64_t r = r0; r < r1; ++r) {
    const float* in = x + r * c;
    const float* gr = dy + r * c;
    float* o = dx + r * c;
    for (int64_t j = 0; j < c; ++j) {
      const float xhat = (in[j] - k.mean[j]) * k.inv_std[j];
      o[j] = k.a[j] * (gr[j] - k.mb[j] - xhat * k.mg[j]);
    }
  }
}

#define DTRAIN_CLONES(name, params, args)          \
  DTRAIN_V4 void name##_v4 params { name##_body args; } \
  DTRAIN_V3 void name##_v3 params { name##_body args; } \
  void name##_base params { name##_body args; }

DTRAIN_CLONES(sums, (const float* x, int64_t r0, int64_t r1, int64_t c, double* acc), (x, r0, r1, c, acc))
DTRAIN_CLONES(sqdev, (const float* x, const float* mean, int64_t r0, int64_t r1, int64_t c, double* acc),
              (x, mean, r0, r1, c, acc))
DTRAIN_CLONES(apply,
              (const float* x, const float* scale, const float* shift, int64_t r0, int64_t r1, int64_t c, float* y),
              (x, scale, shift, r0, r1, c, y))
DTRAIN_CLONES(param,
              (const float* x, const float* dy, const float* mean, const float* inv_std, int64_t r0, int64_t r1,
               int64_t c, double* acc),
              (x, dy, mean, inv_std, r0, r1, c, acc))
DTRAIN_CLONES(input_grad,
              (const float* x, const float* dy, const InputGradCoeffs& k, int64_t r0, int64_t r1, int64_t c,
               float* dx),
              (x, dy, k, r0, r1, c, dx))
#undef DTRAIN_CLONES

}  // namespace

void batch_norm_sums(const float* x, int64_t rows, int64_t c, double* sum) {
  static const auto fn = pick_for_cpu_isa(&sums_v4, &sums_v3, &sums_base);
  column_sums_ranges(rows, c, c, sum, [&](int64_t r0, int64_t r1, double* acc) { fn(x, r0, r1, c, acc); });
}

void batch_norm_squared_deviations(const float* x, const float* mean, int64_t rows, int64_t c, double* sq) {
  static const auto fn = pick_for_cpu_isa(&sqdev_v4, &sqdev_v3, &sqdev_base);
  column_sums_ranges(rows, c, c, sq, [&](int64_t r0, int64_t r1, double* acc) { fn(x, mean, r0, r1, c, acc); });
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
  static const auto fn = pick_for_cpu_isa(&apply_v4, &apply_v3, &apply_base);
  parallel_ranges(rows, c, [&](int64_t first, int64_t last) { fn(x, scale, shift, first, last, c, y); });
}

void batch_norm_param_grads(const float* x, const float* dy, const float* mean, const float* inv_std, int64_t rows,
                            int64_t c, double* sums, float* dgamma, float* dbeta) {
  static const auto fn = pick_for_cpu_isa(&param_v4, &param_v3, &param_base);
  column_sums_ranges(rows, c, 2 * c, sums,
                     [&](int64_t r0, int64_t r1, double* acc) { fn(x, dy, mean, inv_std, r0, r1, c, acc); });
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
  static const auto fn = pick_for_cpu_isa(&input_grad_v4, &input_grad_v3, &input_grad_base);
  const InputGradCoeffs k{mean, inv_std, a, mb, mg};
  parallel_ranges(rows, c, [&](int64_t first, int64_t last) { fn(x, dy, k, first, last, c, dx); });
}

}  // namespace dtrain::kernels
