// Dense layer: build errors, params, gradients, output-buffer reuse, inputs
// of rank > 2 (Keras: the kernel applies to the last axis) in float32 and
// bfloat16.
#include <doctest.h>

#include <cmath>

#include "engine/layers/dense.hpp"
#include "tests/engine/layers/layer_test_util.hpp"

namespace dtrain {
namespace {

Dense make_dense(int64_t units, bool use_bias = true) {
  return Dense(units, use_bias, {"glorot_uniform", 0.0f}, {"zeros", 0.0f});
}

TEST_CASE("dense: any rank >= 1 builds (last axis replaced by units); rank 0 is refused with the exact message") {
  Dense d = make_dense(10);
  CHECK(*d.build({28, 28, 1}) == Shape{28, 28, 10});
  CHECK(d.params()[0].shape == Shape{1, 10});
  CHECK(*d.build({6, 4}) == Shape{6, 10});
  CHECK(d.params()[0].shape == Shape{4, 10});
  auto r = d.build({});
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().kind == ErrorKind::kConfig);
  CHECK(r.error().message == "dense expects an input with a feature (last) dimension; got shape []");
}

TEST_CASE("dense: params follow Keras shapes and initializers") {
  Dense d = make_dense(7);
  REQUIRE(d.build({5}).ok());
  CHECK(*d.build({5}) == Shape{7});
  const auto p = d.params();
  REQUIRE(p.size() == 2);
  CHECK(p[0].name == "kernel");
  CHECK(p[0].shape == Shape{5, 7});
  CHECK(p[0].init.type == "glorot_uniform");
  CHECK(p[1].name == "bias");
  CHECK(p[1].shape == Shape{7});
  CHECK(p[1].init.type == "zeros");
  Dense nb = make_dense(7, false);
  REQUIRE(nb.build({5}).ok());
  CHECK(nb.params().size() == 1);
}

TEST_CASE("dense: forward computes x W + b") {
  Dense d = make_dense(2);
  REQUIRE(d.build({3}).ok());
  std::vector<Tensor> params{Tensor::from({3, 2}, {1, 2, 3, 4, 5, 6}), Tensor::from({2}, {0.5f, -1})};
  const Tensor x = Tensor::from({2, 3}, {1, 0, -1, 2, 1, 0});
  Tensor y;
  LayerCache cache;
  d.forward({}, params, x, y, cache);
  // row 0: [1-5, 2-6] + b = [-3.5, -5]; row 1: [2+3, 4+4] + b = [5.5, 7]
  CHECK(y.to_vector() == std::vector<float>{-3.5f, -5.0f, 5.5f, 7.0f});
}

TEST_CASE("dense: gradients match finite differences") {
  for (bool use_bias : {true, false}) {
    CAPTURE(use_bias);
    Dense d = make_dense(6, use_bias);
    REQUIRE(d.build({5}).ok());
    test::check_gradients(d, test::make_params(d, 3), test::random_tensor({4, 5}, 11));
  }
}

TEST_CASE("dense: reuses a correctly sized output buffer but never one aliasing the input") {
  Dense d = make_dense(4);
  REQUIRE(d.build({4}).ok());
  auto params = test::make_params(d, 5);
  const Tensor x = test::random_tensor({3, 4}, 1);
  Tensor y(Shape{3, 4});
  const float* storage = y.data();
  LayerCache cache;
  d.forward({}, params, x, y, cache);
  CHECK(y.data() == storage);
  Tensor expected = y.clone();
  Tensor aliased = x;  // same storage as x: must not be written in place
  d.forward({}, params, x, aliased, cache);
  CHECK(aliased.data() != x.data());
  test::check_close(aliased, expected, 1e-6, "y");
}

// The rank-3 path is the flat path on (B*T, in): the same numbers, bit for
// bit, forward and backward, under float32 and bfloat16 compute.
TEST_CASE("dense: a (B, T, in) input equals the flat layer on (B*T, in), in float32 and bfloat16") {
  for (const DType compute : {DType::f32, DType::bf16}) {
    CAPTURE(dtype_name(compute));
    const ops::Context octx{kHost, compute};
    ForwardContext ctx;
    ctx.ops = &octx;
    Dense seq = make_dense(5), flat = make_dense(5);
    REQUIRE(seq.build({3, 4}).ok());
    REQUIRE(flat.build({4}).ok());
    auto params = test::make_params(seq, 7);
    params[1] = test::random_tensor({5}, 8);
    const Tensor x = test::random_tensor({2, 3, 4}, 9);
    const Tensor dy = test::random_tensor({2, 3, 5}, 10);
    Tensor y_seq, y_flat, dx_seq, dx_flat;
    LayerCache c_seq, c_flat;
    seq.forward(ctx, params, x, y_seq, c_seq);
    flat.forward(ctx, params, x.reshaped({6, 4}), y_flat, c_flat);
    CHECK(y_seq.shape() == Shape{2, 3, 5});
    CHECK(y_seq.to_vector() == y_flat.to_vector());
    std::vector<Tensor> g_seq{Tensor({4, 5}), Tensor({5})}, g_flat{Tensor({4, 5}), Tensor({5})};
    seq.backward(ctx, params, g_seq, x, y_seq, dy, &dx_seq, c_seq);
    flat.backward(ctx, params, g_flat, x.reshaped({6, 4}), y_flat, dy.reshaped({6, 5}), &dx_flat, c_flat);
    CHECK(dx_seq.shape() == Shape{2, 3, 4});
    CHECK(dx_seq.to_vector() == dx_flat.to_vector());
    CHECK(g_seq[0].to_vector() == g_flat[0].to_vector());
    CHECK(g_seq[1].to_vector() == g_flat[1].to_vector());
  }
}

// bfloat16 rounds x and the kernel to 8 significant bits and accumulates in
// float32: a rank-3 output stays within 1% (relative L2) of float32's and
// is not float32 in disguise.
TEST_CASE("dense: bfloat16 compute on a rank-3 input is within tolerance of float32") {
  Dense d = make_dense(16);
  REQUIRE(d.build({5, 32}).ok());
  auto params = test::make_params(d, 11);
  const Tensor x = test::random_tensor({4, 5, 32}, 12);
  const ops::Context f32{kHost, DType::f32}, bf16{kHost, DType::bf16};
  ForwardContext c32, c16;
  c32.ops = &f32;
  c16.ops = &bf16;
  Tensor y32, y16;
  LayerCache a, b;
  d.forward(c32, params, x, y32, a);
  d.forward(c16, params, x, y16, b);
  REQUIRE(y16.shape() == Shape{4, 5, 16});
  double num = 0, den = 0;
  for (int64_t i = 0; i < y32.numel(); ++i) {
    num += (double{y16[i]} - y32[i]) * (double{y16[i]} - y32[i]);
    den += double{y32[i]} * y32[i];
  }
  const double rel = std::sqrt(num / den);
  CHECK(rel < 1e-2);
  CHECK(rel > 1e-5);
}

}  // namespace
}  // namespace dtrain
