// Layer normalization's CPU kernels (engine/kernels/layer_norm.hpp).
#include "engine/kernels/layer_norm.hpp"

#include <cmath>
#include <vector>

#include "engine/kernels/parallel.hpp"

namespace dtrain::kernels {

namespace {

// The sum over j in [0, n) of f(j), over 8 interleaved partial sums added in
// a fixed order: it vectorises, and the order depends on n alone.
template <class F>
double lane_sum(int64_t n, F&& f) {
  double s[8] = {};
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    for (int l = 0; l < 8; ++l) s[l] += f(j + l);
  }
  for (; j < n; ++j) s[j % 8] += f(j);
  return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}

}  // namespace

void layer_norm_forward(const float* x, const float* gamma, const float* beta, int64_t rows, int64_t c, float epsilon,
                        float* y, float* mean, float* inv_std) {
  parallel_ranges(rows, c, [&](int64_t first, int64_t last) {
    for (int64_t r = first; r < last; ++r) {
      const float* in = x + r * c;
      float* out = y + r * c;
      const double m = lane_sum(c, [&](int64_t j) { return static_cast<double>(in[j]); }) / static_cast<double>(c);
      const double sq = lane_sum(c, [&](int64_t j) { return (in[j] - m) * (in[j] - m); });
      const auto var = static_cast<float>(sq / static_cast<double>(c));
      const auto mu = static_cast<float>(m);
      const float is = 1.0f / std::sqrt(var + epsilon);
      mean[r] = mu;
      inv_std[r] = is;
      for (int64_t j = 0; j < c; ++j) {
        const float xhat = (in[j] - mu) * is;
        out[j] = (gamma ? gamma[j] * xhat : xhat) + (beta ? beta[j] : 0.0f);
      }
    }
  });
}

void layer_norm_backward(const float* x, const float* dy, const float* gamma, const float* mean, const float* inv_std,
                         int64_t rows, int64_t c, float* dgamma, float* dbeta, float* dx) {
  // sums[j] = dgamma, sums[c + j] = dbeta; each row also writes its dx.
  std::vector<double> sums(2 * static_cast<size_t>(c));
  column_sums(rows, c, 2 * c, sums.data(), [&](int64_t r, double* acc) {
    const float* in = x + r * c;
    const float* gr = dy + r * c;
    double* dg = acc;
    double* db = acc + c;
    const float mu = mean[r], is = inv_std[r];
    for (int64_t j = 0; j < c; ++j) {
      const float xhat = (in[j] - mu) * is;
      dg[j] += static_cast<double>(gr[j]) * xhat;
      db[j] += gr[j];
    }
    if (dx == nullptr) return;
    // gx = dy * gamma; dx = inv_std * (gx - mean(gx) - xhat * mean(gx * xhat)).
    auto gx = [&](int64_t j) { return gamma ? gr[j] * gamma[j] : gr[j]; };
    const double sum_g = lane_sum(c, [&](int64_t j) { return static_cast<double>(gx(j)); });
    const double sum_gx = lane_sum(c, [&](int64_t j) { return static_cast<double>(gx(j)) * ((in[j] - mu) * is); });
    const auto mg = static_cast<float>(sum_g / static_cast<double>(c));
    const auto mgx = static_cast<float>(sum_gx / static_cast<double>(c));
    float* o = dx + r * c;
    for (int64_t j = 0; j < c; ++j) {
      const float xhat = (in[j] - mu) * is;
      o[j] = is * (gx(j) - mg - xhat * mgx);
    }
  });
  for (int64_t j = 0; j < c; ++j) {
    if (dgamma != nullptr) dgamma[j] = static_cast<float>(sums[static_cast<size_t>(j)]);
    if (dbeta != nullptr) dbeta[j] = static_cast<float>(sums[static_cast<size_t>(c + j)]);
  }
}

}  // namespace dtrain::kernels
