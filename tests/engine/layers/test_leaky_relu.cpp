// leaky_relu: values against the formula evaluated here in double, the
// gradient at the kink (TensorFlow's: x = 0 takes the slope), finite
// differences, the debug device, and its options through the job loader.
#include <doctest.h>

#include "config_schema/job_loader.hpp"
#include "engine/layers/leaky_relu.hpp"
#include "engine/layers/registry.hpp"
#include "tests/engine/layers/layer_test_util.hpp"

namespace dtrain {
namespace {

TEST_CASE("leaky_relu: forward and backward against the formula") {
  LeakyReLU layer(0.2f);
  REQUIRE(*layer.build({3}) == Shape{3});
  const std::vector<float> xs{-2.5f, -0.1f, 0.0f, 0.1f, 3.0f, -7.0f};
  const Tensor x = Tensor::from({2, 3}, xs);
  Tensor y, dx;
  LayerCache cache;
  layer.forward(ForwardContext{}, {}, x, y, cache);
  const Tensor dy = Tensor::from({2, 3}, {1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f});
  layer.backward(ForwardContext{}, {}, {}, x, y, dy, &dx, cache);
  for (size_t i = 0; i < xs.size(); ++i) {
    CAPTURE(i);
    const double xi = xs[i], slope = 0.2;
    CHECK(y[static_cast<int64_t>(i)] == doctest::Approx(xi > 0 ? xi : slope * xi).epsilon(1e-7));
    const double gi = dy[static_cast<int64_t>(i)];
    CHECK(dx[static_cast<int64_t>(i)] == doctest::Approx(xi > 0 ? gi : slope * gi).epsilon(1e-7));
  }
  CHECK(dx[2] == doctest::Approx(0.2 * 3.0));  // x = 0: the slope's side
}

TEST_CASE("leaky_relu: finite differences and the debug device") {
  auto made = make_layer(default_layer_spec("leaky_relu"));
  REQUIRE(made.ok());
  Layer& layer = **made;
  REQUIRE(layer.build({4, 5}).ok());
  const Tensor x = test::away_from_zero({3, 4, 5}, 17);
  test::check_gradients(layer, {}, x);
  const ops::Context debug{Device{DeviceKind::debug, 0}, DType::f32};
  ForwardContext on_debug;
  on_debug.ops = &debug;
  Tensor y_host, y_debug;
  LayerCache c1, c2;
  layer.forward(ForwardContext{}, {}, x, y_host, c1);
  layer.forward(on_debug, {}, x.to(debug.device), y_debug, c2);
  CHECK(y_debug.to_host().to_vector() == y_host.to_vector());
  for (int64_t i = 0; i < x.numel(); ++i) {
    CAPTURE(i);
    CHECK(y_host[i] == (x[i] > 0.0f ? x[i] : 0.3f * x[i]));  // the default slope, Keras' 0.3
  }
}

TEST_CASE("leaky_relu: its option from a job, its errors") {
  LoadOptions options;
  options.check_files = false;
  auto job = load_job_from_string(
      "model:\n  input: {shape: [4]}\n  layers:\n    - {type: leaky_relu, negative_slope: 0.05}\n"
      "    - {type: leaky_relu}\n",
      "lr.yaml", "/nonexistent", options);
  REQUIRE_MESSAGE(job.ok(), job.error().message);
  CHECK(layer_options<LeakyReluSpec>(job->model.layers[0]).negative_slope == 0.05f);
  CHECK(layer_options<LeakyReluSpec>(job->model.layers[1]).negative_slope == 0.3f);
  CHECK(job->model.layers[1].name == "leaky_relu_1");
  CHECK(job->resolved_yaml.find("    - type: leaky_relu\n      name: leaky_relu\n      negative_slope: 0.05\n") !=
        std::string::npos);
  auto bad = load_job_from_string("model:\n  input: {shape: [4]}\n  layers:\n    - {type: leaky_relu, negative_slope: -1}\n",
                                  "lr.yaml", "/nonexistent", options);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message == "lr.yaml:4:42: model.layers[0].negative_slope: -1 is below the minimum 0");
  LayerSpec s = default_layer_spec("leaky_relu");
  layer_options<LeakyReluSpec>(s).negative_slope = -0.5f;
  CHECK(make_layer(s).error().message == "leaky_relu: negative_slope must be >= 0; got -0.5");
}

}  // namespace
}  // namespace dtrain
