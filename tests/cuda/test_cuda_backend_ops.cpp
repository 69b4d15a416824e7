// The cuda backend of ops:: against the CPU backend, through the same public
// calls the layers, losses and optimizers make (ops::, Layer, Loss,
// Optimizer) on gpu:0 and on the host, with random inputs. Skipped, saying
// why, without a GPU.
//
// Tolerance per op: 0 (bit-identical) for the ops whose GPU kernel is the
// CPU loop's sequence of correctly rounded float operations: mul, add_into,
// scale, sum_rows, relu forward/backward, dropout, sgd, adam/adamw. Others:
//   matmul (cuBLASLt, another summation order): 1e-5 relative + 2e-6 x k absolute
//   matmul under precision.matmul: tf32 (10-bit mantissa products): 2e-3 relative + 2e-3 x sqrt(k)
//   sigmoid, tanh (CUDA's expf/tanhf vs oneDNN's): 4e-6 relative + 1e-6 absolute (the
//     backward's dy (1 - y^2) and dy y (1 - y) carry an ulp of y near 1 times |dy|)
//   softmax and its gradient (another summation order and exp): 1e-5 relative + 1e-7
//   sparse softmax cross-entropy value (expf in a double sum): 1e-6 relative;
//     its gradient 1e-5 relative + 1e-7
//   sum_squares (double, another order): 1e-12 relative
#include <doctest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "engine/layers/activation.hpp"
#include "engine/layers/dense.hpp"
#include "engine/layers/dropout.hpp"
#include "engine/losses/loss.hpp"
#include "engine/ops/core.hpp"
#include "engine/ops/library.hpp"
#include "engine/optim/optimizer.hpp"
#include "tests/cuda/backend_test_util.hpp"
#include "tests/engine/layers/layer_test_util.hpp"

namespace dtrain::gputest_backend {
namespace {

using dtrain::test::random_tensor;

Tensor on_gpu(const Tensor& host) { return host.to(kGpu0); }

TEST_CASE("cuda backend memory: gpu:0 tensors round-trip through copies, fill and zeros") {
  DTRAIN_REQUIRE_GPU_BACKEND();
  const Tensor host = random_tensor({1000, 37}, 1);
  const Tensor dev = on_gpu(host);
  CHECK(dev.device() == kGpu0);
  check_same(dev, host, "host -> gpu:0 -> host copy");
  Tensor dev2 = Tensor::empty(host.shape(), DType::f32, kGpu0);
  dev2.copy_from(dev);  // device to device
  check_same(dev2, host, "gpu:0 -> gpu:0 copy");
  dev2.fill(2.5f);
  check_same(dev2, Tensor(host.shape(), 2.5f), "fill(2.5) on gpu:0");
  check_same(Tensor::zeros({3, 5}, DType::f32, kGpu0), Tensor({3, 5}), "zeros on gpu:0");
  // An odd size (not a multiple of 4 bytes' blocks) and an empty tensor.
  const Tensor one = random_tensor({1}, 2);
  check_same(on_gpu(one), one, "one element");
  CHECK(on_gpu(Tensor({0, 4})).to_host().numel() == 0);
}

TEST_CASE("cuda backend memory: a repeated allocation pattern makes no cudaMalloc once warm") {
  DTRAIN_REQUIRE_GPU_BACKEND();
  auto pattern = [] {
    std::vector<Tensor> ts;
    for (int64_t n : {1, 100, 4096, 300000, 3000000}) ts.push_back(Tensor::empty({n}, DType::f32, kGpu0));
  };
  pattern();
  const gpu::MemoryStats before = gpu::memory_stats(kGpu0);
  for (int i = 0; i < 5; ++i) pattern();
  const gpu::MemoryStats after = gpu::memory_stats(kGpu0);
  CHECK(after.cuda_mallocs == before.cuda_mallocs);
  CHECK(after.cuda_frees == before.cuda_frees);
}

TEST_CASE("cuda backend ops: matmul equals the CPU for every transpose, with and without bias") {
  DTRAIN_REQUIRE_GPU_BACKEND();
  const int64_t m = 67, n = 45, k = 129;
  for (const bool ta : {false, true}) {
    for (const bool tb : {false, true}) {
      for (const bool with_bias : {false, true}) {
        const Tensor a = random_tensor(ta ? Shape{k, m} : Shape{m, k}, 10 + ta);
        const Tensor b = random_tensor(tb ? Shape{n, k} : Shape{k, n}, 20 + tb);
        const Tensor bias = random_tensor({n}, 30);
        kernels::MatmulShape s{m, n, k, ta, tb};
        Tensor want({m, n});
        ops::matmul(cpu(), s, a, b, with_bias ? &bias : nullptr, want);
        Tensor got = Tensor::empty({m, n}, DType::f32, kGpu0);
        const Tensor gb = on_gpu(bias);
        ops::matmul(gpu(), s, on_gpu(a), on_gpu(b), with_bias ? &gb : nullptr, got);
        check_close(got, want, 1e-5, 2e-6 * k,
                    "matmul trans_a=" + std::to_string(ta) + " trans_b=" + std::to_string(tb) +
                        " bias=" + std::to_string(with_bias));
      }
    }
  }
}

TEST_CASE("cuda backend ops: matmul under precision.matmul tf32 stays within TF32 rounding of the CPU") {
  DTRAIN_REQUIRE_GPU_BACKEND();
  const int64_t m = 128, n = 96, k = 256;
  const Tensor a = random_tensor({m, k}, 1), b = random_tensor({k, n}, 2);
  Tensor want({m, n});
  ops::matmul(cpu(), {m, n, k}, a, b, nullptr, want);
  const ops::Context tf32{kGpu0, DType::f32, true};
  Tensor got = Tensor::empty({m, n}, DType::f32, kGpu0);
  ops::matmul(tf32, {m, n, k}, on_gpu(a), on_gpu(b), nullptr, got);
  check_close(got, want, 2e-3, 2e-3 * std::sqrt(double(k)), "matmul tf32");
}

TEST_CASE("cuda backend ops: mul, add_into, scale and sum_rows are bit-identical to the CPU") {
  DTRAIN_REQUIRE_GPU_BACKEND();
  const Tensor a = random_tensor({301, 77}, 3), b = random_tensor({301, 77}, 4);
  Tensor want({301, 77});
  ops::mul(cpu(), a, b, want);
  Tensor got = Tensor::empty({301, 77}, DType::f32, kGpu0);
  ops::mul(gpu(), on_gpu(a), on_gpu(b), got);
  check_same(got, want, "mul");

  Tensor acc_cpu = a.to_host(), acc_gpu = on_gpu(a);
  ops::add_into(cpu(), acc_cpu, b);
  ops::add_into(gpu(), acc_gpu, on_gpu(b));
  check_same(acc_gpu, acc_cpu, "add_into");

  ops::scale(cpu(), acc_cpu, 0.37f);
  ops::scale(gpu(), acc_gpu, 0.37f);
  check_same(acc_gpu, acc_cpu, "scale");

  for (const int64_t rows : {int64_t{1}, int64_t{301}}) {
    const Tensor x = random_tensor({rows, 77}, 5);
    Tensor s_cpu({77});
    ops::sum_rows(cpu(), x, s_cpu);
    Tensor s_gpu = Tensor::empty({77}, DType::f32, kGpu0);
    ops::sum_rows(gpu(), on_gpu(x), s_gpu);
    check_same(s_gpu, s_cpu, "sum_rows over " + std::to_string(rows) + " rows");
  }
}

TEST_CASE("cuda backend ops: sum_squares and all_finite equal the CPU") {
  DTRAIN_REQUIRE_GPU_BACKEND();
  for (const int64_t n : {int64_t{1}, int64_t{1000}, int64_t{1000003}}) {
    const Tensor x = random_tensor({n}, 6);
    const double want = ops::sum_squares(cpu(), x), got = ops::sum_squares(gpu(), on_gpu(x));
    CHECK_MESSAGE(std::fabs(got - want) <= 1e-12 * want,
                  "sum_squares of " << n << ": " << got << " on gpu:0, " << want << " on the CPU");
    CHECK(ops::all_finite(gpu(), on_gpu(x)));
    Tensor bad = x.to_host();
    bad[n - 1] = std::numeric_limits<float>::infinity();
    CHECK_FALSE(ops::all_finite(gpu(), on_gpu(bad)));
    bad[n - 1] = std::numeric_limits<float>::quiet_NaN();
    CHECK_FALSE(ops::all_finite(gpu(), on_gpu(bad)));
  }
}

TEST_CASE("cuda backend layers: relu, sigmoid, tanh and softmax forward and backward equal the CPU") {
  DTRAIN_REQUIRE_GPU_BACKEND();
  struct Case {
    ActivationKind kind;
    const char* name;
    double rtol, atol;
  };
  for (const Case c : {Case{ActivationKind::kRelu, "relu", 0, 0}, Case{ActivationKind::kSigmoid, "sigmoid", 4e-6, 1e-6},
                       Case{ActivationKind::kTanh, "tanh", 4e-6, 1e-6},
                       Case{ActivationKind::kSoftmax, "softmax", 1e-5, 1e-7}}) {
    for (const int64_t cols : {int64_t{10}, int64_t{1000}}) {
      Activation layer(c.kind);
      REQUIRE(layer.build({cols}).ok());
      // x ~ N(0, 2^2): sigmoid and tanh well inside and near saturation.
      const Tensor x = random_tensor({64, cols}, 7, 2.0f), dy = random_tensor({64, cols}, 8);
      const LayerPass want = run_layer(layer, cpu(), {}, x, dy, true);
      const LayerPass got = run_layer(layer, gpu(), {}, x, dy, true);
      const std::string what = std::string(c.name) + " over " + std::to_string(cols) + " columns";
      if (c.rtol == 0) {
        check_same(got.y, want.y, what + " forward");
        check_same(got.dx, want.dx, what + " backward");
      } else {
        check_close(got.y, want.y, c.rtol, c.atol, what + " forward");
        check_close(got.dx, want.dx, c.rtol, c.atol, what + " backward");
      }
    }
  }
}

TEST_CASE("cuda backend layers: dropout masks, outputs and gradients are bit-identical to the CPU") {
  DTRAIN_REQUIRE_GPU_BACKEND();
  Dropout layer(0.3f, "dropout_1");
  REQUIRE(layer.build({333}).ok());
  const Tensor x = random_tensor({50, 333}, 9), dy = random_tensor({50, 333}, 10);
  const LayerPass want = run_layer(layer, cpu(), {}, x, dy, true);
  const LayerPass got = run_layer(layer, gpu(), {}, x, dy, true);
  check_same(got.y, want.y, "dropout forward");
  check_same(got.dx, want.dx, "dropout backward");
  const LayerPass eval = run_layer(layer, gpu(), {}, x, dy, false);
  check_same(eval.y, x, "dropout outside training");
}

TEST_CASE("cuda backend layers: dense forward, input and weight gradients equal the CPU") {
  DTRAIN_REQUIRE_GPU_BACKEND();
  for (const bool use_bias : {true, false}) {
    Dense layer(96, use_bias, {"glorot_uniform", 0.0f}, {"zeros", 0.0f});
    REQUIRE(layer.build({200}).ok());
    const std::vector<Tensor> params = dtrain::test::make_params(layer, 11);
    const Tensor x = random_tensor({128, 200}, 12), dy = random_tensor({128, 96}, 13);
    const LayerPass want = run_layer(layer, cpu(), params, x, dy, true);
    const LayerPass got = run_layer(layer, gpu(), params, x, dy, true);
    const std::string what = use_bias ? "dense with bias" : "dense without bias";
    check_close(got.y, want.y, 1e-5, 2e-6 * 200, what + " forward");
    check_close(got.dx, want.dx, 1e-5, 2e-6 * 96, what + " dx");
    check_close(got.grads[0], want.grads[0], 1e-5, 2e-6 * 128, what + " dkernel");
    if (use_bias) check_same(got.grads[1], want.grads[1], what + " dbias (sum_rows)");
  }
}

TEST_CASE("cuda backend loss: sparse softmax cross-entropy value and gradient equal the CPU, bad labels included") {
  DTRAIN_REQUIRE_GPU_BACKEND();
  auto loss = make_loss("sparse_softmax_cross_entropy");
  REQUIRE(loss.ok());
  for (const int64_t classes : {int64_t{10}, int64_t{1000}}) {
    const Tensor logits = random_tensor({129, classes}, 14, 5.0f);
    Tensor labels({129});
    for (int64_t i = 0; i < 129; ++i) labels[i] = static_cast<float>((i * 7) % classes);
    for (const bool bad : {false, true}) {
      if (bad) labels[3] = static_cast<float>(classes);  // out of range: a NaN row
      Tensor d_cpu, d_gpu;
      const double want = (*loss)->forward_backward(logits, labels, &d_cpu, 1.0f / 129, cpu());
      const double got = (*loss)->forward_backward(on_gpu(logits), on_gpu(labels), &d_gpu, 1.0f / 129, gpu());
      const std::string what = "sparse_softmax_cross_entropy over " + std::to_string(classes) + " classes" +
                               (bad ? " with a bad label" : "");
      if (bad) {
        CHECK_MESSAGE(std::isnan(got), what << ": the sum is " << got << " on gpu:0, NaN on the CPU");
      } else {
        CHECK_MESSAGE(std::fabs(got - want) <= 1e-6 * std::fabs(want),
                      what << ": the sum is " << got << " on gpu:0, " << want << " on the CPU");
      }
      check_close(d_gpu, d_cpu, 1e-5, 1e-7, what + " gradient");
      // Without a gradient (evaluation).
      const double eval = (*loss)->forward_backward(on_gpu(logits), on_gpu(labels), nullptr, 1.0f, gpu());
      CHECK((std::isnan(eval) ? std::isnan(got) : eval == got));
    }
  }
}

TEST_CASE("cuda backend optimizers: sgd, momentum, nesterov, adam and adamw updates are bit-identical to the CPU") {
  DTRAIN_REQUIRE_GPU_BACKEND();
  struct Case {
    const char* type;
    double momentum;
    bool nesterov;
  };
  for (const Case c : {Case{"sgd", 0.0, false}, Case{"sgd", 0.9, false}, Case{"sgd", 0.9, true},
                       Case{"adam", 0.0, false}, Case{"adamw", 0.0, false}}) {
    OptimizerSpec spec;
    spec.type = c.type;
    spec.momentum = c.momentum;
    spec.nesterov = c.nesterov;
    auto opt = make_optimizer(spec);
    REQUIRE(opt.ok());
    Tensor var_cpu = random_tensor({1001}, 15);
    Tensor var_gpu = on_gpu(var_cpu);
    std::vector<Tensor> slots_cpu, slots_gpu;
    for (size_t k = 0; k < (*opt)->slot_names().size(); ++k) {
      slots_cpu.emplace_back(Shape{1001}, (*opt)->slot_initial_value(k));
      slots_gpu.push_back(on_gpu(slots_cpu.back()));
    }
    for (int64_t step = 1; step <= 3; ++step) {
      const Tensor grad = random_tensor({1001}, 16 + static_cast<uint64_t>(step));
      (*opt)->apply(step, 0.01f, var_cpu, grad, slots_cpu, cpu());
      (*opt)->apply(step, 0.01f, var_gpu, on_gpu(grad), slots_gpu, gpu());
    }
    const std::string what = std::string(c.type) + (c.momentum > 0 ? " momentum" : "") + (c.nesterov ? " nesterov" : "");
    check_same(var_gpu, var_cpu, what + ": variable after 3 steps");
    for (size_t k = 0; k < slots_cpu.size(); ++k) {
      check_same(slots_gpu[k], slots_cpu[k], what + ": slot " + (*opt)->slot_names()[k]);
    }
  }
}

}  // namespace
}  // namespace dtrain::gputest_backend
