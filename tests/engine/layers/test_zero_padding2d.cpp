// zero_padding2d: values placed in the middle of zeros, dy cropped back,
// finite differences, and the debug device.
#include <doctest.h>

#include "engine/layers/zero_padding2d.hpp"
#include "tests/engine/layers/layer_test_util.hpp"

namespace dtrain {
namespace {

TEST_CASE("zero_padding2d: forward pads each image, backward crops dy") {
  ZeroPadding2D pad(1, 2);
  REQUIRE(*pad.build({2, 1, 2}) == Shape{4, 5, 2});
  // (B=1, 2, 1, 2): pixels (0,0) = [1, 2], (1,0) = [3, 4].
  const Tensor x = Tensor::from({1, 2, 1, 2}, {1, 2, 3, 4});
  Tensor y;
  LayerCache cache;
  ForwardContext ctx;
  pad.forward(ctx, {}, x, y, cache);
  REQUIRE(y.shape() == Shape{1, 4, 5, 2});
  std::vector<float> want(40, 0.0f);
  // Row h+1, column w+2: index ((h + 1) * 5 + 2) * 2 + c.
  want[(1 * 5 + 2) * 2 + 0] = 1;
  want[(1 * 5 + 2) * 2 + 1] = 2;
  want[(2 * 5 + 2) * 2 + 0] = 3;
  want[(2 * 5 + 2) * 2 + 1] = 4;
  CHECK(y.to_vector() == want);
  Tensor dy(Shape{1, 4, 5, 2});
  for (int64_t i = 0; i < dy.numel(); ++i) dy[i] = static_cast<float>(i);
  Tensor dx;
  pad.backward(ctx, {}, {}, x, y, dy, &dx, cache);
  CHECK(dx.to_vector() == std::vector<float>{14, 15, 24, 25});
}

TEST_CASE("zero_padding2d: finite differences and the debug device") {
  ZeroPadding2D pad(2, 1);
  REQUIRE(pad.build({3, 4, 2}).ok());
  const Tensor x = test::random_tensor({2, 3, 4, 2}, 9);
  test::check_gradients(pad, {}, x);
  const ops::Context debug{Device{DeviceKind::debug, 0}, DType::f32};
  ForwardContext on_debug;
  on_debug.ops = &debug;
  Tensor y_host, y_debug;
  LayerCache c1, c2;
  pad.forward(ForwardContext{}, {}, x, y_host, c1);
  pad.forward(on_debug, {}, x.to(debug.device), y_debug, c2);
  CHECK(y_debug.to_host().to_vector() == y_host.to_vector());
  CHECK(pad.build({4}).error().message ==
        "zero_padding2d expects an image input (height, width, channels); got shape [4]");
}

}  // namespace
}  // namespace dtrain
