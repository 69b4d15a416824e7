// Every op on every backend present (cpu, debug; bf16 compute where the
// backend has it) against the float32 host reference: a model holding every
// layer type (forward and backward), every loss and every optimizer, with a
// tolerance per compute type (and a second model of the sequence layers on
// token ids). The debug backend runs the CPU kernels, so in
// float32 it must agree bit for bit; its point is that any host access of
// its memory inside a layer, loss or optimizer faults here.
#include <doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <string>
#include <vector>

#include "config_schema/job_loader.hpp"
#include "engine/layers/registry.hpp"
#include "engine/losses/loss.hpp"
#include "engine/model/model.hpp"
#include "engine/ops/core.hpp"
#include "engine/ops/support.hpp"
#include "engine/optim/initializers.hpp"
#include "engine/optim/optimizer.hpp"
#include "tests/engine/backend/seeded_tensor.hpp"

namespace dtrain {
namespace {

struct Backend {
  Device device;
  DType compute;
  double tol;       // relative L2 difference allowed against the f32 host run: outputs
  double grad_tol;  // ... and gradients
};

// float32 on the debug device runs the very same kernels: exact. bfloat16
// rounds every matmul/conv input to 8 significant bits (relative error up to
// 2^-9 per element) and accumulates in float32: the model's output stays
// within 2% (relative L2) of float32's. A gradient passes back through every
// later layer's matmul or convolution, each rounding both the incoming
// gradient and the weights, so the errors compound towards the input: the
// first conv2d's gradients differ by up to 1.8% here (measured; 6.4% before
// multi_head_attention joined the model and shifted every later variable's
// random values), held to 10%. Attention's own gradients differ by up to
// 1.7% (key/bias's is exactly zero). With inputs whose positions are nearly
// alike (sigmoid outputs) its query and key gradients differed by up to 49%:
// dS = P (dP - rowsum(P dP)) cancels, and bf16's rounding of V and dO is no
// longer small against what remains.
// The debug device's bfloat16 equals the cpu's bfloat16 exactly (checked
// separately).
std::vector<Backend> backends() {
  const Device debug{DeviceKind::debug, 0};
  return {{kHost, DType::f32, 0.0, 0.0},
          {debug, DType::f32, 0.0, 0.0},
          {kHost, DType::bf16, 2e-2, 1e-1},
          {debug, DType::bf16, 2e-2, 1e-1}};
}

double rel_diff(const Tensor& a, const Tensor& b) {
  const std::vector<float> x = a.to_vector(), y = b.to_vector();
  REQUIRE(x.size() == y.size());
  double num = 0, den = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    num += (double{x[i]} - y[i]) * (double{x[i]} - y[i]);
    den += double{y[i]} * y[i];
  }
  return std::sqrt(num) / std::max(std::sqrt(den), 1e-12);
}

Tensor random_tensor(const Shape& shape, uint64_t seed, float lo = -1.0f, float hi = 1.0f) {
  return test::seeded_tensor(shape, seed, lo, hi);
}

// Every layer type the registry has but the sequence layers (below), in one
// model on 10x10x3 images.
const char* const kAllLayers = R"(model:
  input: {shape: [10, 10, 3]}
  layers:
    - {type: conv2d, filters: 6, kernel: 3, padding: same, activation: relu}
    - {type: batch_norm}
    - {type: conv2d, filters: 5, kernel: [3, 2], strides: 2, activation: gelu}
    - {type: avg_pool2d, size: 2, padding: same}
    - {type: activation, activation: tanh}
    - {type: leaky_relu, negative_slope: 0.1}
    - {type: reshape, target_shape: [6, 5]}
    - {type: multi_head_attention, num_heads: 2, key_dim: 3, value_dim: 2, dropout: 0.2, use_causal_mask: true}
    - {type: reshape, target_shape: [30]}
    - {type: dense, units: 12, activation: sigmoid}
    - {type: dropout, rate: 0.3}
    - {type: reshape, target_shape: [2, 2, 3]}
    - {type: max_pool2d, size: 2, strides: 1}
    - {type: flatten}
    - {type: dense, units: 4}
    - {type: activation, activation: softmax}
  loss: mean_squared_error
)";

// The sequence layers on token ids: embedding, position_embedding, dense on
// rank-3 activations, layer_norm and the three global pools.
const char* const kSequenceLayers = R"(model:
  input: {shape: [8], dtype: int32}
  layers:
    - {type: embedding, input_dim: 11, output_dim: 6}
    - {type: position_embedding, sequence_length: 10}
    - {type: dense, units: 5, activation: gelu}
    - {type: layer_norm}
    - {type: reshape, target_shape: [2, 4, 5]}
    - {type: global_max_pool2d}
    - {type: dense, units: 24}
    - {type: reshape, target_shape: [3, 2, 4]}
    - {type: global_avg_pool2d}
    - {type: dense, units: 12, activation: tanh}
    - {type: reshape, target_shape: [4, 3]}
    - {type: layer_norm, center: false}
    - {type: global_avg_pool1d}
    - {type: dense, units: 4}
  loss: mean_squared_error
)";

// A graph of every merge layer (a value read by several layers, padding on
// one branch).
const char* const kGraphLayers = R"(model:
  input: {shape: [6, 6, 2]}
  layers:
    - {name: c1, type: conv2d, filters: 3, kernel: 3, padding: same}
    - {type: zero_padding2d, padding: 1}
    - {name: c2, type: conv2d, filters: 3, kernel: 3}
    - {name: s, type: add, inputs: [c1, c2], activation: tanh}
    - {name: d, type: subtract, inputs: [c1, c2]}
    - {name: m, type: multiply, inputs: [s, d]}
    - {name: av, type: average, inputs: [m, s, d]}
    - {name: mx, type: maximum, inputs: [av, s]}
    - {type: concatenate, inputs: [mx, d]}
    - {type: flatten}
    - {type: dense, units: 4}
  loss: mean_squared_error
)";

std::unique_ptr<Model> build_model(const char* text = kAllLayers) {
  LoadOptions options;
  options.check_files = false;
  auto job = load_job_from_string(text, "ops.yaml", "/nonexistent", options);
  REQUIRE_MESSAGE(job.ok(), (job.ok() ? std::string() : job.error().message));
  auto model = Model::build(job->model);
  REQUIRE(model.ok());
  return std::move(*model);
}

struct Pass {
  Tensor out;
  std::vector<Tensor> values, grads;  // on the host
};

// Token ids 0..10 as float32, deterministic (the embedding kernel reads float
// ids too; the test below checks int32 ids give the same).
Tensor token_ids(int64_t batch, int64_t steps) {
  Tensor t(Shape{batch, steps});
  for (int64_t i = 0; i < t.numel(); ++i) t[i] = static_cast<float>((i * 7 + 3) % 11);
  return t;
}

Pass run_model(const Model& model, const Backend& b, bool training, const Tensor& input) {
  ops::Context ctx{b.device, b.compute};
  ReplicaState rs = model.make_replica_state(ctx);
  uint64_t seed = 100;
  for (size_t i = 0; i < model.variables().size(); ++i) {
    Tensor v(model.variables()[i].shape);
    REQUIRE(initialize(v, model.variables()[i].init, 7, model.variables()[i].name).ok());
    if (model.variables()[i].name.find("moving_variance") == std::string::npos) {
      v = random_tensor(v.shape(), seed++, -0.5f, 0.5f);
    }
    rs.values[i] = v.to(b.device);
  }
  const Tensor x = input.to(b.device);
  ForwardContext fc{training, 42, 3, 0, &ctx};
  Pass p;
  p.out = model.forward(fc, rs, x).to_host().clone();
  const Tensor dy = random_tensor(p.out.shape(), 2).to(b.device);
  model.backward(fc, rs, x, dy);
  for (const Tensor& v : rs.values) p.values.push_back(v.to_host().clone());
  for (const Tensor& g : rs.grads) p.grads.push_back(g.empty() ? Tensor() : g.to_host().clone());
  return p;
}

// Runs `model` on every backend, training and not, against the f32 host run.
void check_every_backend(const Model& model, const Tensor& input) {
  for (const bool training : {true, false}) {
    const Pass ref = run_model(model, backends()[0], training, input);
    for (const Backend& b : backends()) {
      INFO(fmt::format("{} compute {} training {}", b.device.str(), dtype_name(b.compute), training));
      const Pass got = run_model(model, b, training, input);
      CHECK(rel_diff(got.out, ref.out) <= b.tol);
      if (b.compute != DType::f32) {
        // Not float32 in disguise: bfloat16 rounding shows.
        CHECK(rel_diff(got.out, ref.out) > 1e-5);
        const Pass same_type_on_host = run_model(model, Backend{kHost, b.compute, 0.0, 0.0}, training, input);
        CHECK(rel_diff(got.out, same_type_on_host.out) == 0.0);
      }
      for (size_t i = 0; i < ref.values.size(); ++i) {
        INFO(model.variables()[i].name);
        CHECK(rel_diff(got.values[i], ref.values[i]) <= b.tol);  // batch_norm's moving statistics
        if (!ref.grads[i].empty()) CHECK(rel_diff(got.grads[i], ref.grads[i]) <= b.grad_tol);
      }
    }
  }
}

TEST_CASE("ops on every backend: every layer's forward and backward against the f32 host reference") {
  check_every_backend(*build_model(kAllLayers), random_tensor({6, 10, 10, 3}, 1));
}

TEST_CASE("ops on every backend: the sequence layers on token ids against the f32 host reference") {
  check_every_backend(*build_model(kSequenceLayers), token_ids(6, 8));
}

TEST_CASE("ops on every backend: the merge layers in a graph against the f32 host reference") {
  check_every_backend(*build_model(kGraphLayers), random_tensor({5, 6, 6, 2}, 3));
}

TEST_CASE("ops on every backend: the models hold every registered layer type") {
  const std::string both = std::string(kAllLayers) + kSequenceLayers + kGraphLayers;
  for (const std::string& type : layer_types()) {
    CAPTURE(type);
    CHECK((both.find(" type: " + type + ",") != std::string::npos || both.find("{type: " + type + ",") != std::string::npos ||
           both.find("{type: " + type + "}") != std::string::npos));
  }
}

TEST_CASE("ops on every backend: every loss's value and gradient against the f32 host reference") {
  for (const char* name : {"sparse_softmax_cross_entropy", "softmax_cross_entropy", "sigmoid_cross_entropy",
                           "mean_squared_error"}) {
    auto loss = make_loss(name);
    REQUIRE(loss.ok());
    const Tensor logits = random_tensor({5, 4}, 3, -3.0f, 3.0f);
    const bool sparse = std::string(name) == "sparse_softmax_cross_entropy";
    Tensor labels = sparse ? Tensor::from({5}, {0, 3, 1, 2, 3}) : random_tensor({5, 4}, 4, 0.0f, 1.0f);
    Tensor ref_grad;
    const double ref = (*loss)->forward_backward(logits, labels, &ref_grad, 0.2f);
    for (const Backend& b : backends()) {
      INFO(fmt::format("{} on {}", name, b.device.str()));
      const ops::Context ctx{b.device, b.compute};
      Tensor grad;
      const double got = (*loss)->forward_backward(logits.to(b.device), labels.to(b.device), &grad, 0.2f, ctx);
      CHECK(grad.device() == b.device);
      // Losses compute in float32 under every policy: exact.
      CHECK(got == ref);
      CHECK(rel_diff(grad, ref_grad) == 0.0);
    }
  }
}

TEST_CASE("ops on every backend: every optimizer's update against the f32 host reference") {
  for (const char* text : {"{type: sgd, learning_rate: 0.1}", "{type: sgd, learning_rate: 0.1, momentum: 0.9}",
                           "{type: sgd, learning_rate: 0.1, momentum: 0.9, nesterov: true}",
                           "{type: adam, learning_rate: 0.01}", "{type: adamw, learning_rate: 0.01, weight_decay: 0.1}",
                           "{type: rmsprop, learning_rate: 0.01}", "{type: rmsprop, learning_rate: 0.01, momentum: 0.5}",
                           "{type: adagrad, learning_rate: 0.1}"}) {
    LoadOptions options;
    options.check_files = false;
    auto job = load_job_from_string(fmt::format("model:\n  input: {{shape: [2]}}\n  layers:\n    - {{type: dense, units: 1}}\n"
                                                "optimizer: {}\n", text),
                                    "opt.yaml", "/nonexistent", options);
    REQUIRE_MESSAGE(job.ok(), (job.ok() ? std::string() : job.error().message));
    auto opt = make_optimizer(job->optimizer);
    REQUIRE(opt.ok());
    auto run = [&](const Backend& b) {
      const ops::Context ctx{b.device, b.compute};
      Tensor var = random_tensor({33}, 5).to(b.device);
      std::vector<Tensor> slots;
      for (size_t k = 0; k < (*opt)->slot_names().size(); ++k) {
        slots.push_back(Tensor({33}, (*opt)->slot_initial_value(k)).to(b.device));
      }
      for (int64_t step = 1; step <= 3; ++step) {
        (*opt)->apply(step, 0.05f, var, random_tensor({33}, 10 + static_cast<uint64_t>(step)).to(b.device), slots, ctx);
      }
      std::vector<Tensor> out{var.to_host().clone()};
      for (const Tensor& s : slots) out.push_back(s.to_host().clone());
      return out;
    };
    const auto ref = run(backends()[0]);
    for (const Backend& b : backends()) {
      INFO(fmt::format("{} on {}", text, b.device.str()));
      const auto got = run(b);
      // Optimizers update float32 master weights under every policy: exact.
      for (size_t i = 0; i < ref.size(); ++i) CHECK(rel_diff(got[i], ref[i]) == 0.0);
    }
  }
}

TEST_CASE("ops on every backend: the core ops against the f32 host reference") {
  const Tensor a = random_tensor({4, 9}, 21), c = random_tensor({4, 9}, 22);
  for (const Backend& b : backends()) {
    INFO(b.device.str());
    const ops::Context ctx{b.device, b.compute};
    Tensor acc = a.clone().to(b.device);
    ops::add_into(ctx, acc, c.to(b.device));
    std::vector<float> want(36);
    for (int64_t i = 0; i < 36; ++i) want[static_cast<size_t>(i)] = a[i] + c[i];
    CHECK(acc.to_vector() == want);
    ops::scale(ctx, acc, 0.5f);
    for (float& w : want) w *= 0.5f;
    CHECK(acc.to_vector() == want);
    Tensor prod = Tensor::empty({4, 9}, DType::f32, b.device);
    ops::mul(ctx, a.to(b.device), c.to(b.device), prod);
    for (int64_t i = 0; i < 36; ++i) CHECK(prod.to_vector()[static_cast<size_t>(i)] == a[i] * c[i]);
    Tensor col = Tensor::empty({9}, DType::f32, b.device);
    ops::sum_rows(ctx, a.to(b.device), col);
    for (int64_t j = 0; j < 9; ++j) {
      CHECK(col.to_vector()[static_cast<size_t>(j)] == ((a[j] + a[9 + j]) + a[18 + j]) + a[27 + j]);
    }
    double sq = 0;
    for (int64_t i = 0; i < 36; ++i) sq += double{a[i]} * a[i];
    CHECK(ops::sum_squares(ctx, a.to(b.device)) == doctest::Approx(sq).epsilon(1e-12));
    CHECK(ops::all_finite(ctx, a.to(b.device)));
    Tensor bad = a.clone();
    bad[17] = std::nanf("");
    CHECK(!ops::all_finite(ctx, bad.to(b.device)));
    bad[17] = INFINITY;
    CHECK(!ops::all_finite(ctx, bad.to(b.device)));
  }
}

}  // namespace
}  // namespace dtrain

namespace dtrain {
namespace {

TEST_CASE("ops on every backend: int32 token ids give what float32 ids give") {
  const auto model = build_model(kSequenceLayers);
  const Tensor f = token_ids(3, 8);
  Tensor i = Tensor::empty(f.shape(), DType::i32, kHost);
  for (int64_t k = 0; k < f.numel(); ++k) i.host_data<int32_t>()[k] = static_cast<int32_t>(f[k]);
  for (const Backend& b : backends()) {
    INFO(fmt::format("{} compute {}", b.device.str(), dtype_name(b.compute)));
    const Pass from_f32 = run_model(*model, b, true, f), from_i32 = run_model(*model, b, true, i);
    CHECK(rel_diff(from_i32.out, from_f32.out) == 0.0);
    for (size_t k = 0; k < from_f32.grads.size(); ++k) {
      if (!from_f32.grads[k].empty()) CHECK(rel_diff(from_i32.grads[k], from_f32.grads[k]) == 0.0);
    }
  }
}

// What the cuda backend runs so far: an MLP (sample_configs/mnist_mlp.yaml's
// layers, and every activation but gelu), in float32 only.
TEST_CASE("ops support: an MLP and a CNN run on gpu:0 in float32, not in bfloat16 or float16, and gelu not at all") {
  const auto mlp = build_model(R"(model:
  input: {shape: [28, 28, 1]}
  layers:
    - {type: flatten}
    - {type: dense, units: 16, activation: relu}
    - {type: dropout, rate: 0.2}
    - {type: dense, units: 16, activation: tanh}
    - {type: dense, units: 16, activation: sigmoid}
    - {type: reshape, target_shape: [4, 4]}
    - {type: activation, activation: softmax}
    - {type: flatten}
    - {type: dense, units: 10}
  loss: sparse_softmax_cross_entropy
)");
  const Device gpu0{DeviceKind::cuda, 0};
  CHECK(mlp->check_support(ops::Context{gpu0, DType::f32}).ok());
  CHECK(mlp->check_support(ops::Context{gpu0, DType::f32, true}).ok());  // precision.matmul: tf32
  for (const DType t : {DType::bf16, DType::f16}) {
    const Status s = mlp->check_support(ops::Context{gpu0, t});
    REQUIRE_FALSE(s.ok());
    CHECK(s.error().message == fmt::format("ops.yaml:5:7: model.layers[1] (dense): dense cannot run on gpu:0 in {}: the "
                                           "cuda backend has no {} matmul (the GPU backend runs float32 only so far)",
                                           dtype_name(t), dtype_name(t)));
  }
  for (const char* op : {"sparse_softmax_cross_entropy", "sgd", "adam", "adamw", "reduce", "conv2d", "pool2d"}) {
    CHECK_MESSAGE(ops::supports(op, ops::Context{gpu0, DType::f32}), op);
  }
  for (const char* op : {"softmax_cross_entropy", "sigmoid_cross_entropy", "mean_squared_error", "rmsprop", "adagrad",
                         "gelu", "batch_norm", "layer_norm", "embedding", "pool2d_pad_after", "conv2d_dilated"}) {
    CHECK_MESSAGE(!ops::supports(op, ops::Context{gpu0, DType::f32}), op);
    CHECK_MESSAGE(ops::supports(op, ops::Context{kHost, DType::f32}), op);
  }
}

TEST_CASE("ops support: what a backend cannot run is refused when the model is set up, naming layer, device and type") {
  const auto model = build_model();
  CHECK(model->check_support(ops::Context{kHost, DType::f32}).ok());
  CHECK(model->check_support(ops::Context{Device{DeviceKind::debug, 1}, DType::bf16}).ok());
  const Status f16 = model->check_support(ops::Context{kHost, DType::f16});
  REQUIRE_FALSE(f16.ok());
  CHECK(f16.error().message ==
        "ops.yaml:4:7: model.layers[0] (conv2d): conv2d cannot run on cpu:0 in float16: the cpu backend has no "
        "float16 conv2d (oneDNN has no float16 convolution on the CPU)");
  const Status gpu = model->check_support(ops::Context{Device{DeviceKind::cuda, 0}, DType::f32});
  REQUIRE_FALSE(gpu.ok());
  // conv2d (layers[0]) runs on a GPU; batch_norm does not yet.
  CHECK(gpu.error().message ==
        "ops.yaml:5:7: model.layers[1] (batch_norm): batch_norm cannot run on gpu:0 in float32: the cuda backend has "
        "no batch_norm op in this dtrain yet (on a GPU it runs dense, conv2d, max_pool2d, avg_pool2d, flatten, "
        "reshape, dropout and relu/tanh/sigmoid/softmax activations, sparse_softmax_cross_entropy, sgd and adam/adamw "
        "so far); use a cpu:N device");
  // The sequence layers run on cpu and debug in both compute types, not yet on cuda.
  const auto sequence = build_model(kSequenceLayers);
  for (const Backend& b : backends()) CHECK(sequence->check_support(ops::Context{b.device, b.compute}).ok());
  const Status seq_gpu = sequence->check_support(ops::Context{Device{DeviceKind::cuda, 0}, DType::f32});
  REQUIRE_FALSE(seq_gpu.ok());
  CHECK(seq_gpu.error().message ==
        "ops.yaml:4:7: model.layers[0] (embedding): embedding cannot run on gpu:0 in float32: the cuda backend has "
        "no embedding op in this dtrain yet (on a GPU it runs dense, conv2d, max_pool2d, avg_pool2d, flatten, "
        "reshape, dropout and relu/tanh/sigmoid/softmax activations, sparse_softmax_cross_entropy, sgd and adam/adamw "
        "so far); use a cpu:N device");
}

}  // namespace
}  // namespace dtrain
