// The cuda backend test helpers (backend_test_util.hpp).
#include "tests/cuda/backend_test_util.hpp"

#include <cmath>
#include <cstring>
#include <vector>

namespace dtrain::gputest_backend {

const ops::Context& gpu() {
  static const ops::Context c{kGpu0, DType::f32};
  return c;
}

const ops::Context& cpu() { return ops::host_context(); }

LayerPass run_layer(const Layer& layer, const ops::Context& ctx, const std::vector<Tensor>& host_params,
                    const Tensor& host_x, const Tensor& host_dy, bool training) {
  std::vector<Tensor> params, grads;
  for (const Tensor& p : host_params) {
    params.push_back(p.to(ctx.device));
    grads.push_back(Tensor::zeros(p.shape(), DType::f32, ctx.device));
  }
  const Tensor x = host_x.to(ctx.device), dy = host_dy.to(ctx.device);
  ForwardContext f;
  f.training = training;
  f.seed = 42;
  f.step = 7;
  f.example_offset = 100;
  f.ops = &ctx;
  LayerCache cache;
  Tensor y, dx;
  layer.forward(f, params, x, y, cache);
  layer.backward(f, params, grads, x, y, dy, &dx, cache);
  LayerPass out{y.to_host(), dx.to_host(), {}};
  for (const Tensor& g : grads) out.grads.push_back(g.to_host());
  return out;
}

void check_close(const Tensor& got_t, const Tensor& want_t, double rtol, double atol, const std::string& what) {
  REQUIRE_MESSAGE(got_t.numel() == want_t.numel(), what << ": " << got_t.numel() << " elements on the GPU, "
                                                        << want_t.numel() << " on the CPU");
  const std::vector<float> got = got_t.to_vector(), want = want_t.to_vector();
  double worst = 0;  // excess over the tolerance
  size_t at = 0;
  bool bad = false;
  for (size_t i = 0; i < got.size(); ++i) {
    const bool gn = std::isnan(got[i]), wn = std::isnan(want[i]);
    double excess = 0;
    if (gn || wn) {
      excess = gn && wn ? 0 : INFINITY;
    } else {
      excess = std::fabs(double{got[i]} - want[i]) - (atol + rtol * std::fabs(double{want[i]}));
    }
    if (excess > 0 && (!bad || excess > worst)) {
      bad = true;
      worst = excess;
      at = i;
    }
  }
  CHECK_MESSAGE(!bad, what << ": element " << at << " of " << got.size() << " is " << (got.empty() ? 0 : got[at])
                           << " on gpu:0, " << (want.empty() ? 0 : want[at]) << " on the CPU (tolerance " << atol
                           << " + " << rtol << " x |CPU|)");
}

void check_same(const Tensor& got_t, const Tensor& want_t, const std::string& what) {
  REQUIRE(got_t.numel() == want_t.numel());
  const std::vector<float> got = got_t.to_vector(), want = want_t.to_vector();
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::memcmp(&got[i], &want[i], sizeof(float)) != 0) {
      FAIL_CHECK(what << ": element " << i << " of " << got.size() << " is " << got[i] << " on gpu:0, " << want[i]
                      << " on the CPU (must be bit-identical)");
      return;
    }
  }
}

}  // namespace dtrain::gputest_backend
