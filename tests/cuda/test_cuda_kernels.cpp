// Every CUDA kernel of engine/cuda/ against its CPU counterpart on random
// inputs: relu (the activation layer), bias add, scale and axpy (their
// definitions as loops), the fused sgd/adam updates (engine/optim, over 150
// tensors: three launches) and dropout (the dropout layer). Skipped, saying
// why, without a GPU.
//
// Tolerance per op, in units in the last place: 0 for every op here. Each is
// a fixed sequence of correctly rounded IEEE float operations in the CPU
// code's order, never contracted into an FMA (update_math.hpp), and the CPU
// code is compiled without FMA, so the bits must match. A kernel that drifts
// by one rounding fails.
#include <doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "engine/cuda/dropout.hpp"
#include "engine/cuda/eltwise.hpp"
#include "engine/cuda/fused_optim.hpp"
#include "engine/layers/activation.hpp"
#include "engine/layers/dropout.hpp"
#include "engine/optim/optimizer.hpp"
#include "tests/cuda/gpu_test_util.hpp"
#include "tests/engine/layers/layer_test_util.hpp"

namespace dtrain::cuda {
namespace {

using gputest::DeviceArray;

constexpr int64_t kReluUlps = 0, kBiasAddUlps = 0, kScaleUlps = 0, kAxpyUlps = 0;
constexpr int64_t kSgdUlps = 0, kAdamUlps = 0, kDropoutUlps = 0;

cudaStream_t compute() { return gputest::gpu0().compute.get(); }

int64_t ordered(float f) {
  int32_t i = 0;
  std::memcpy(&i, &f, sizeof(i));
  return i < 0 ? int64_t{std::numeric_limits<int32_t>::min()} - i : i;
}

// CHECKs |got - want| <= max_ulps elementwise (NaN only matches NaN) and
// names the first worst element.
void check_ulps(const std::vector<float>& got, const std::vector<float>& want, int64_t max_ulps,
                const std::string& what) {
  REQUIRE(got.size() == want.size());
  int64_t worst = 0;
  size_t at = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const bool gn = std::isnan(got[i]), wn = std::isnan(want[i]);
    const int64_t d = gn || wn ? (gn && wn ? 0 : std::numeric_limits<int64_t>::max())
                               : std::llabs(ordered(got[i]) - ordered(want[i]));
    if (d > worst) {
      worst = d;
      at = i;
    }
  }
  CHECK_MESSAGE(worst <= max_ulps, what << ": element " << at << " is " << got[at] << " on the GPU, " << want[at]
                                        << " on the CPU (" << worst << " ulps; allowed " << max_ulps << ")");
}

void require_ok(const Status& s) { REQUIRE_MESSAGE(s.ok(), (s.ok() ? "" : s.error().message)); }

TEST_CASE("cuda kernels: relu forward and backward equal the CPU activation layer") {
  DTRAIN_SKIP_WITHOUT_GPU();
  Activation relu(ActivationKind::kRelu);
  REQUIRE(relu.build({1000}).ok());
  // 16800 rows: 16.8 M elements, more threads than the grid has: the grid-stride loop.
  for (const int64_t rows : {int64_t{37}, int64_t{16800}}) {
    CAPTURE(rows);
    Tensor x = dtrain::test::random_tensor({rows, 1000}, 3);
    x[0] = 0.0f;
    x[1] = -0.0f;
    x[2] = std::numeric_limits<float>::quiet_NaN();
    x[3] = std::numeric_limits<float>::denorm_min();
    const Tensor dy = dtrain::test::random_tensor({rows, 1000}, 4);
    Tensor y, dx;
    LayerCache cache;
    relu.forward({}, {}, x, y, cache);
    relu.backward({}, {}, {}, x, y, dy, &dx, cache);

    DeviceArray gx(x), gy(x.numel()), gdy(dy), gdx(x.numel());
    require_ok(relu_forward(gx.data(), gy.data(), x.numel(), compute()));
    check_ulps(gy.download(), y.to_vector(), kReluUlps, "relu forward");
    require_ok(relu_backward(gy.data(), gdy.data(), gdx.data(), x.numel(), compute()));
    check_ulps(gdx.download(), dx.to_vector(), kReluUlps, "relu backward");
    // In place, as the header allows.
    require_ok(relu_forward(gx.data(), gx.data(), x.numel(), compute()));
    check_ulps(gx.download(), y.to_vector(), kReluUlps, "relu forward in place");
    require_ok(relu_backward(gy.data(), gdy.data(), gdy.data(), x.numel(), compute()));
    check_ulps(gdy.download(), dx.to_vector(), kReluUlps, "relu backward in place");
  }
}

TEST_CASE("cuda kernels: bias_add, scale and axpy equal their CPU loops") {
  DTRAIN_SKIP_WITHOUT_GPU();
  const int64_t rows = 333, cols = 77, n = rows * cols;
  const std::vector<float> x = dtrain::test::random_tensor({n}, 5).to_vector();
  const std::vector<float> y0 = dtrain::test::random_tensor({n}, 6).to_vector();
  const std::vector<float> bias = dtrain::test::random_tensor({cols}, 7).to_vector();
  const float alpha = -0.3712f;
  std::vector<float> biased(x.size()), scaled(x.size()), axpy_want(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) biased[static_cast<size_t>(r * cols + c)] = x[static_cast<size_t>(r * cols + c)] + bias[static_cast<size_t>(c)];
  }
  for (size_t i = 0; i < x.size(); ++i) {
    scaled[i] = alpha * x[i];
    const float prod = alpha * x[i];
    axpy_want[i] = y0[i] + prod;
  }
  DeviceArray gx(x), gb(bias), gy(n), gz(y0);
  require_ok(bias_add(gx.data(), gb.data(), gy.data(), rows, cols, compute()));
  check_ulps(gy.download(), biased, kBiasAddUlps, "bias_add");
  require_ok(scale(alpha, gx.data(), gy.data(), n, compute()));
  check_ulps(gy.download(), scaled, kScaleUlps, "scale");
  require_ok(axpy(alpha, gx.data(), gz.data(), n, compute()));
  check_ulps(gz.download(), axpy_want, kAxpyUlps, "axpy");
  require_ok(bias_add(gx.data(), gb.data(), gx.data(), rows, cols, compute()));  // in place
  check_ulps(gx.download(), biased, kBiasAddUlps, "bias_add in place");
}

struct OptimCase {
  const char* type;
  double momentum = 0.0;
  bool nesterov = false;
};

// Three steps of the CPU optimizer on each of 150 tensors and of one fused
// update per step over all of them on the GPU.
void check_fused_optimizer(const OptimCase& c) {
  CAPTURE(c.type);
  CAPTURE(c.momentum);
  CAPTURE(c.nesterov);
  OptimizerSpec spec;
  spec.type = c.type;
  spec.momentum = c.momentum;
  spec.nesterov = c.nesterov;
  spec.weight_decay = 0.05;
  Result<std::unique_ptr<Optimizer>> opt = make_optimizer(spec);
  REQUIRE(opt.ok());
  const size_t slots = (*opt)->slot_names().size();
  const bool adam = std::string(c.type) == "adam" || std::string(c.type) == "adamw";

  constexpr int kTensors = 150;  // 3 launches of at most 64
  std::vector<int64_t> sizes;
  for (int i = 0; i < kTensors; ++i) {
    const int64_t special[] = {0, 1, 16384, 16385, 100003};
    sizes.push_back(i < 5 ? special[i] : 1 + (i * 7919) % 5000);
  }
  std::vector<Tensor> var;
  std::vector<std::vector<Tensor>> slot(kTensors);
  std::vector<std::unique_ptr<DeviceArray>> gvar, gs0, gs1;
  for (int i = 0; i < kTensors; ++i) {
    var.push_back(dtrain::test::random_tensor({sizes[static_cast<size_t>(i)]}, 1000 + static_cast<uint64_t>(i)));
    for (size_t k = 0; k < slots; ++k) slot[static_cast<size_t>(i)].emplace_back(Shape{sizes[static_cast<size_t>(i)]}, (*opt)->slot_initial_value(k));
    gvar.push_back(std::make_unique<DeviceArray>(var.back()));
    gs0.push_back(slots > 0 ? std::make_unique<DeviceArray>(slot[static_cast<size_t>(i)][0]) : nullptr);
    gs1.push_back(slots > 1 ? std::make_unique<DeviceArray>(slot[static_cast<size_t>(i)][1]) : nullptr);
  }
  for (int64_t step = 1; step <= 3; ++step) {
    const float lr = 0.02f * static_cast<float>(step);
    std::vector<std::unique_ptr<DeviceArray>> ggrad;
    std::vector<OptimTensor> list;
    for (int i = 0; i < kTensors; ++i) {
      const auto ui = static_cast<size_t>(i);
      const Tensor grad = dtrain::test::random_tensor({sizes[ui]}, 50000 + 1000 * static_cast<uint64_t>(step) + ui);
      (*opt)->apply(step, lr, var[ui], grad, slot[ui]);
      ggrad.push_back(std::make_unique<DeviceArray>(grad));
      list.push_back({gvar[ui]->data(), ggrad.back()->data(), gs0[ui] ? gs0[ui]->data() : nullptr,
                      gs1[ui] ? gs1[ui]->data() : nullptr, sizes[ui]});
    }
    if (adam) {
      const exact::AdamScalars s = exact::adam_scalars(spec.beta1, spec.beta2, spec.epsilon,
                                                       std::string(c.type) == "adamw" ? spec.weight_decay : 0.0, lr, step);
      require_ok(adam_update(list, s, compute()));
    } else {
      require_ok(sgd_update(list, lr, static_cast<float>(spec.momentum), spec.nesterov, compute()));
    }
    gputest::sync_compute();
  }
  const int64_t ulps = adam ? kAdamUlps : kSgdUlps;
  for (int i = 0; i < kTensors; ++i) {
    CAPTURE(i);
    const auto ui = static_cast<size_t>(i);
    check_ulps(gvar[ui]->download(), var[ui].to_vector(), ulps, std::string(c.type) + " variable");
    if (slots > 0) check_ulps(gs0[ui]->download(), slot[ui][0].to_vector(), ulps, std::string(c.type) + " slot 0");
    if (slots > 1) check_ulps(gs1[ui]->download(), slot[ui][1].to_vector(), ulps, std::string(c.type) + " slot 1");
  }
}

TEST_CASE("cuda fused optimizers: sgd, momentum, nesterov, adam and adamw over 150 tensors equal engine/optim") {
  DTRAIN_SKIP_WITHOUT_GPU();
  check_fused_optimizer({"sgd"});
  check_fused_optimizer({"sgd", 0.9, false});
  check_fused_optimizer({"sgd", 0.9, true});
  check_fused_optimizer({"adam"});
  check_fused_optimizer({"adamw"});
}

TEST_CASE("cuda dropout: masks, outputs and gradients are bit-identical to the CPU dropout layer") {
  DTRAIN_SKIP_WITHOUT_GPU();
  struct Case {
    float rate;
    Shape example;
    int64_t rows;
    bool random;
  };
  // 105 elements per example: the last Philox block of a row is partial.
  // 40000 x 1700: more Philox blocks than the grid has threads.
  for (const Case& c : {Case{0.3f, {3, 7, 5}, 64, true}, Case{0.9f, {1700}, 40000, false}}) {
    CAPTURE(c.rate);
    CAPTURE(c.rows);
    Dropout layer(c.rate, "dropout_2");
    REQUIRE(layer.build(c.example).ok());
    Shape shape{c.rows};
    shape.insert(shape.end(), c.example.begin(), c.example.end());
    const Tensor x = c.random ? dtrain::test::random_tensor(shape, 8) : Tensor(shape, 1.5f);
    const Tensor dy = c.random ? dtrain::test::random_tensor(shape, 9) : Tensor(shape, -0.25f);
    ForwardContext ctx;
    ctx.training = true;
    ctx.seed = 7;
    ctx.step = 3;
    ctx.example_offset = 512;
    Tensor y, dx;
    LayerCache cache;
    layer.forward(ctx, {}, x, y, cache);
    layer.backward(ctx, {}, {}, x, y, dy, &dx, cache);

    const int64_t per = x.numel() / c.rows;
    DeviceArray gx(x), gmask(x.numel()), gy(x.numel()), gdy(dy), gdx(x.numel());
    require_ok(dropout_forward(layer.mask_key(ctx.seed, ctx.step), ctx.example_offset, c.rate, gx.data(), gmask.data(),
                               gy.data(), c.rows, per, compute()));
    check_ulps(gmask.download(), cache.saved.at(0).to_vector(), kDropoutUlps, "dropout mask");
    check_ulps(gy.download(), y.to_vector(), kDropoutUlps, "dropout output");
    require_ok(dropout_backward(gmask.data(), gdy.data(), gdx.data(), x.numel(), compute()));
    check_ulps(gdx.download(), dx.to_vector(), kDropoutUlps, "dropout backward");
    // In place (y = x), as the header allows.
    require_ok(dropout_forward(layer.mask_key(ctx.seed, ctx.step), ctx.example_offset, c.rate, gx.data(), gmask.data(),
                               gx.data(), c.rows, per, compute()));
    check_ulps(gx.download(), y.to_vector(), kDropoutUlps, "dropout output in place");
  }
}

}  // namespace
}  // namespace dtrain::cuda
