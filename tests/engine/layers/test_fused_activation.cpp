// A conv2d with a fused relu (oneDNN post-op) equals conv2d followed by a
// separate relu activation layer, forward and backward, and passes the
// finite-difference gradient check.
#include <doctest.h>

#include "engine/layers/registry.hpp"
#include "layer_test_util.hpp"
#include "engine/layers/conv2d.hpp"
#include "engine/layers/dense.hpp"

namespace dtrain {
namespace {

LayerSpec conv_spec() {
  LayerSpec s = default_layer_spec("conv2d");
  s.name = "conv2d";
  auto& o = layer_options<Conv2dSpec>(s);
  o.filters = 4;
  o.kernel = {3, 3};
  o.padding = "same";
  return s;
}

TEST_CASE("conv2d with fused relu equals conv2d then relu") {
  auto fused = make_layer(conv_spec()).value();
  REQUIRE(fused->fuse_activation("relu"));
  auto plain = make_layer(conv_spec()).value();
  auto relu = make_activation("relu").value();
  const Shape in{6, 6, 2};
  REQUIRE(fused->build(in).ok());
  REQUIRE(plain->build(in).ok());
  REQUIRE(relu->build({6, 6, 4}).ok());

  std::vector<Tensor> params = test::make_params(*plain, 11);
  const Tensor x = test::random_tensor({3, 6, 6, 2}, 12);
  const Tensor dy = test::random_tensor({3, 6, 6, 4}, 13);
  ForwardContext ctx;
  ctx.training = true;

  LayerCache c1, c2, c3;
  Tensor y_fused, y_conv, y_relu;
  fused->forward(ctx, params, x, y_fused, c1);
  plain->forward(ctx, params, x, y_conv, c2);
  relu->forward(ctx, {}, y_conv, y_relu, c3);
  test::check_close(y_fused, y_relu, 1e-6, "forward");

  std::vector<Tensor> g_fused{Tensor(params[0].shape()), Tensor(params[1].shape())};
  std::vector<Tensor> g_plain{Tensor(params[0].shape()), Tensor(params[1].shape())};
  Tensor dx_fused, dx_plain, d_conv;
  fused->backward(ctx, params, g_fused, x, y_fused, dy, &dx_fused, c1);
  relu->backward(ctx, {}, {}, y_conv, y_relu, dy, &d_conv, c3);
  plain->backward(ctx, params, g_plain, x, y_conv, d_conv, &dx_plain, c2);
  test::check_close(dx_fused, dx_plain, 1e-6, "dx");
  test::check_close(g_fused[0], g_plain[0], 1e-6, "dkernel");
  test::check_close(g_fused[1], g_plain[1], 1e-6, "dbias");
}

TEST_CASE("conv2d with fused relu: finite-difference gradients") {
  auto fused = make_layer(conv_spec()).value();
  REQUIRE(fused->fuse_activation("relu"));
  REQUIRE(fused->build({5, 5, 2}).ok());
  test::GradCheckOptions opt;
  opt.eps = 1e-3;
  test::check_gradients(*fused, test::make_params(*fused, 21), test::away_from_zero({2, 5, 5, 2}, 22), opt);
}

TEST_CASE("only relu is fused") {
  auto conv = make_layer(conv_spec()).value();
  CHECK_FALSE(conv->fuse_activation("tanh"));
  auto dense = make_layer([] {
    LayerSpec s = default_layer_spec("dense");
    layer_options<DenseSpec>(s).units = 3;
    return s;
  }()).value();
  CHECK_FALSE(dense->fuse_activation("relu"));
}

}  // namespace
}  // namespace dtrain
