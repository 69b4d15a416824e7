// The plain-loop layers and ops split their work over the OpenMP team
// (engine/kernels/parallel.hpp): their outputs and gradients must be the
// same bits with 1, 2 or 3 threads. Shapes are large enough that every
// kernel takes its parallel path.
#include <doctest.h>

#include <omp.h>

#include <functional>
#include <vector>

#include "engine/kernels/parallel.hpp"
#include "engine/layers/activation.hpp"
#include "engine/layers/attention.hpp"
#include "engine/layers/batch_norm.hpp"
#include "engine/layers/layer_norm.hpp"
#include "engine/layers/merge.hpp"
#include "engine/ops/core.hpp"
#include "tests/engine/layers/layer_test_util.hpp"

namespace dtrain {
namespace {

using Results = std::vector<std::vector<float>>;

// run() under 1, 2 and 3 threads gives the same bits each time.
void check_thread_independent(const std::function<Results()>& run) {
  const int saved = omp_get_max_threads();
  omp_set_num_threads(1);
  const Results one = run();
  for (int threads : {2, 3}) {
    CAPTURE(threads);
    omp_set_num_threads(threads);
    const Results many = run();
    REQUIRE(many.size() == one.size());
    for (size_t i = 0; i < one.size(); ++i) {
      CAPTURE(i);
      CHECK(many[i] == one[i]);
    }
  }
  omp_set_num_threads(saved);
}

// Forward then backward (training) of a built one-input layer; returns y,
// dx, the params after forward (moving statistics) and the grads.
Results forward_backward(const Layer& layer, const std::vector<Tensor>& params, const Tensor& x) {
  std::vector<Tensor> p;
  for (const Tensor& t : params) p.push_back(t.clone());
  ForwardContext ctx;
  ctx.training = true;
  Tensor y, dx;
  LayerCache cache;
  layer.forward(ctx, p, x, y, cache);
  const Tensor dy = test::random_tensor(y.shape(), 99);
  std::vector<Tensor> grads(p.size());
  layer.backward(ctx, p, grads, x, y, dy, &dx, cache);
  Results out{y.to_vector(), dx.to_vector()};
  for (const Tensor& t : p) out.push_back(t.to_vector());
  for (const Tensor& g : grads) {
    if (!g.empty()) out.push_back(g.to_vector());
  }
  return out;
}

TEST_CASE("layers: batch_norm, layer_norm, softmax and attention give the same bits for any thread count") {
  REQUIRE(8 * 32 * 32 * 16 >= kernels::kParallelElements);
  SUBCASE("batch_norm") {
    BatchNorm bn(0.9f, 1e-3f);
    REQUIRE(bn.build({32, 32, 16}).ok());
    const Tensor x = test::random_tensor({8, 32, 32, 16}, 1, 2.0f);
    const auto params = test::make_params(bn, 2);
    check_thread_independent([&] { return forward_backward(bn, params, x); });
  }
  SUBCASE("layer_norm") {
    LayerNorm ln(1e-3f, true, true);
    REQUIRE(ln.build({64, 64}).ok());
    const Tensor x = test::random_tensor({32, 64, 64}, 3, 2.0f);
    const auto params = test::make_params(ln, 4);
    check_thread_independent([&] { return forward_backward(ln, params, x); });
  }
  SUBCASE("softmax activation") {
    Activation softmax(ActivationKind::kSoftmax);
    REQUIRE(softmax.build({37}).ok());
    const Tensor x = test::random_tensor({4096, 37}, 5, 3.0f);
    check_thread_independent([&] { return forward_backward(softmax, {}, x); });
  }
  SUBCASE("multi_head_attention, causal") {
    AttentionOptions o;
    o.num_heads = 4;
    o.key_dim = 8;
    o.causal = true;
    MultiHeadAttention mha(o, "attention");
    REQUIRE(mha.build({64, 32}).ok());
    const Tensor x = test::random_tensor({8, 64, 32}, 6);
    const auto params = test::make_params(mha, 7);
    check_thread_independent([&] { return forward_backward(mha, params, x); });
  }
}

TEST_CASE("layers: merges and the elementwise ops give the same bits for any thread count") {
  const Shape shape{16, 4096};
  const Tensor a = test::random_tensor(shape, 11), b = test::random_tensor(shape, 12), c = test::random_tensor(shape, 13);
  const Tensor d = test::random_tensor({2048, 37}, 15);
  for (MergeKind kind : {MergeKind::kAdd, MergeKind::kSubtract, MergeKind::kMultiply, MergeKind::kAverage,
                         MergeKind::kMaximum}) {
    Merge merge(kind);
    CAPTURE(merge.type());
    const bool two = kind == MergeKind::kSubtract;
    std::vector<const Tensor*> xs{&a, &b};
    if (!two) xs.push_back(&c);
    check_thread_independent([&] {
      ForwardContext ctx;
      Tensor y;
      LayerCache cache;
      merge.forward_inputs(ctx, {}, xs, y, cache);
      const Tensor dy = test::random_tensor(shape, 14);
      std::vector<Tensor> dx(xs.size());
      std::vector<Tensor*> dxs;
      for (Tensor& t : dx) dxs.push_back(&t);
      merge.backward_inputs(ctx, {}, {}, xs, y, dy, dxs, cache);
      Results out{y.to_vector()};
      for (const Tensor& t : dx) out.push_back(t.to_vector());
      return out;
    });
  }
  check_thread_independent([&] {
    const ops::Context& ctx = ops::host_context();
    Tensor acc = a.clone(), prod = Tensor::empty(shape, DType::f32, kHost);
    ops::add_into(ctx, acc, b);
    ops::scale(ctx, acc, 0.5f);
    ops::mul(ctx, acc, c, prod);
    Tensor sums = Tensor::empty({4096}, DType::f32, kHost);
    ops::sum_rows(ctx, prod, sums);
    Tensor odd = Tensor::empty({37}, DType::f32, kHost);  // columns not a multiple of 16
    ops::sum_rows(ctx, d, odd);
    return Results{acc.to_vector(), prod.to_vector(), sums.to_vector(), odd.to_vector()};
  });
}

}  // namespace
}  // namespace dtrain
