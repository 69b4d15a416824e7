// multi_head_attention on [query, value] and [query, value, key] in a model
// graph (Keras's call(query, value, key=None)): the layer equals the core
// (checked against PyTorch in test_attention.cpp) fed the same tensors, the
// gradients of every parameter of the graph around it match finite
// differences (so the value's gradient is its value and key parts summed),
// [x, x] equals self-attention on x, and the wrong number of inputs or key and
// value of different lengths are errors naming the layer.
#include <doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "config_schema/job_loader.hpp"
#include "engine/layers/attention.hpp"
#include "engine/model/model.hpp"

namespace dtrain {
namespace {

Result<std::unique_ptr<Model>> model_of(const std::string& yaml) {
  LoadOptions options;
  options.check_files = false;
  auto job = load_job_from_string(yaml, "cross.yaml", "/nonexistent", options);
  if (!job) return job.error();
  return Model::build(job->model);
}

// Input (4, 6): q = dense(input) (4, 6); the value and key come from the
// input re-viewed as 3 steps of 8: v (3, 5), k (3, 7); so Tq != Tk and the
// query, key and value widths all differ.
// Without k in the inputs, the model has no k layer (it would reach no output).
std::string cross_yaml(const std::string& attention_inputs, bool causal = false) {
  const bool with_key = attention_inputs.find('k') != std::string::npos;
  return fmt::format(R"(model:
  input: {{shape: [4, 6]}}
  layers:
    - {{name: q, type: dense, units: 6, inputs: input}}
    - {{name: steps3, type: reshape, target_shape: [3, 8], inputs: input}}
    - {{name: v, type: dense, units: 5, inputs: steps3}}
{}    - {{name: att, type: multi_head_attention, num_heads: 2, key_dim: 3, value_dim: 4, use_causal_mask: {}, inputs: {}}}
)",
                     with_key ? "    - {name: k, type: dense, units: 7, inputs: steps3}\n" : "", causal ? "true" : "false",
                     attention_inputs);
}

// Deterministic values in [-0.4, 0.4] for every variable.
std::vector<Tensor> values_for(const Model& m) {
  std::vector<Tensor> out;
  uint32_t state = 12345;
  for (const VariableSpec& v : m.variables()) {
    Tensor t(v.shape);
    for (int64_t i = 0; i < t.numel(); ++i) {
      state = state * 1664525u + 1013904223u;
      t[i] = (static_cast<float>(state >> 8) / 16777216.0f - 0.5f) * 0.8f;
    }
    out.push_back(t);
  }
  return out;
}

Tensor input_x() {
  Tensor x({2, 4, 6});
  for (int64_t i = 0; i < x.numel(); ++i) x[i] = std::sin(0.37f * static_cast<float>(i) + 0.1f);
  return x;
}

struct Pass {
  Tensor y;
  std::vector<Tensor> grads;
  std::vector<Tensor> activations;
};

Pass run(const Model& m, const std::vector<Tensor>& values, const Tensor& dy) {
  ReplicaState rs = m.make_replica_state();
  for (size_t i = 0; i < values.size(); ++i) rs.values[i] = values[i].clone();
  ForwardContext fc{true, 1, 0, 0, &ops::host_context()};
  const Tensor x = input_x();
  Pass p;
  p.y = m.forward(fc, rs, x).clone();
  for (const Tensor& a : rs.activations) p.activations.push_back(a.empty() ? a : a.clone());
  if (!dy.empty()) {
    m.backward(fc, rs, x, dy);
    for (const Tensor& g : rs.grads) p.grads.push_back(g.clone());
  }
  return p;
}

Tensor dy_for(const Shape& y_shape) {
  Tensor dy(y_shape);
  for (int64_t i = 0; i < dy.numel(); ++i) dy[i] = std::cos(0.23f * static_cast<float>(i));
  return dy;
}

double rel_err(double a, double b) { return std::abs(a - b) / std::max({std::abs(a), std::abs(b), 1e-3}); }

// The attention layer's own variables: those named "att/...".
std::vector<Tensor> attention_params(const Model& m, const std::vector<Tensor>& values) {
  std::vector<Tensor> out;
  for (size_t i = 0; i < values.size(); ++i) {
    if (m.variables()[i].name.rfind("att/", 0) == 0) out.push_back(values[i]);
  }
  return out;
}

TEST_CASE("attention inputs: [query, value] and [query, value, key] equal the core fed the same tensors") {
  for (const bool causal : {false, true}) {
    for (const bool with_key : {false, true}) {
      CAPTURE(causal);
      CAPTURE(with_key);
      auto m = model_of(cross_yaml(with_key ? "[q, v, k]" : "[q, v]", causal));
      REQUIRE_MESSAGE(m.ok(), (m.ok() ? std::string() : m.error().message));
      CHECK((*m)->output_shape() == Shape{4, 6});
      const std::vector<Tensor> values = values_for(**m);
      const Pass p = run(**m, values, Tensor());
      // activations: q 0, steps3 1, v 2, then k 3 when present.
      AttentionOptions o;
      o.num_heads = 2;
      o.key_dim = 3;
      o.value_dim = 4;
      o.causal = causal;
      AttentionCore core(o, "att");
      const Tensor& q = p.activations[0];
      const Tensor& v = p.activations[2];
      const Tensor& k = with_key ? p.activations[3] : v;
      REQUIRE(core.build({4, 6}, {3, with_key ? 7 : 5}, {3, 5}).ok());
      const std::vector<Tensor> params = attention_params(**m, values);
      REQUIRE(params.size() == 8);
      CHECK(params[2].shape() == Shape{with_key ? 7 : 5, 2, 3});  // key/kernel reads the key's width
      LayerCache cache;
      cache.saved.resize(32);
      Tensor y;
      ForwardContext fc{true, 1, 0, 0, &ops::host_context()};
      core.forward(fc, params, q, k, v, y, cache);
      REQUIRE(y.shape() == p.y.shape());
      for (int64_t i = 0; i < y.numel(); ++i) CHECK(p.y[i] == y[i]);
    }
  }
}

TEST_CASE("attention inputs: finite differences over every parameter of the graph around a cross-attention") {
  for (const char* inputs : {"[q, v]", "[q, v, k]"}) {
    CAPTURE(inputs);
    auto m = model_of(cross_yaml(inputs, true));
    REQUIRE(m.ok());
    std::vector<Tensor> values = values_for(**m);
    const Tensor dy = dy_for({2, 4, 6});
    const Pass analytic = run(**m, values, dy);
    auto objective = [&] {
      const Pass p = run(**m, values, Tensor());
      double s = 0;
      for (int64_t i = 0; i < p.y.numel(); ++i) s += double{p.y[i]} * dy[i];
      return s;
    };
    const float eps = 1e-2f;
    for (size_t v = 0; v < values.size(); ++v) {
      const std::string& name = (*m)->variables()[v].name;
      CAPTURE(name);
      double worst = 0;
      for (int64_t i = 0; i < values[v].numel(); ++i) {
        const float keep = values[v][i];
        values[v][i] = keep + eps;
        const double up = objective();
        values[v][i] = keep - eps;
        const double down = objective();
        values[v][i] = keep;
        worst = std::max(worst, rel_err((up - down) / (2.0 * eps), analytic.grads[v][i]));
      }
      CHECK(worst < 2e-2);  // float32 central differences, as test_attention.cpp's checks
    }
  }
}

TEST_CASE("attention inputs: [x, x] is self-attention on x, forward and every gradient") {
  const std::string head = "model:\n  input: {shape: [5, 4]}\n  layers:\n    - {name: x, type: dense, units: 4}\n";
  auto self = model_of(head + "    - {name: att, type: multi_head_attention, num_heads: 2, key_dim: 3}\n");
  auto pair = model_of(head + "    - {name: att, type: multi_head_attention, num_heads: 2, key_dim: 3, inputs: [x, x]}\n");
  auto triple =
      model_of(head + "    - {name: att, type: multi_head_attention, num_heads: 2, key_dim: 3, inputs: [x, x, x]}\n");
  REQUIRE(self.ok());
  REQUIRE(pair.ok());
  REQUIRE(triple.ok());
  const std::vector<Tensor> values = values_for(**self);
  Tensor x({3, 5, 4});
  for (int64_t i = 0; i < x.numel(); ++i) x[i] = std::cos(0.41f * static_cast<float>(i));
  const Tensor dy = dy_for({3, 5, 4});
  auto grads = [&](const Model& m) {
    ReplicaState rs = m.make_replica_state();
    for (size_t i = 0; i < values.size(); ++i) rs.values[i] = values[i].clone();
    ForwardContext fc{true, 1, 0, 0, &ops::host_context()};
    std::vector<Tensor> out{m.forward(fc, rs, x).clone()};
    m.backward(fc, rs, x, dy);
    for (const Tensor& g : rs.grads) out.push_back(g.clone());
    return out;
  };
  const std::vector<Tensor> a = grads(**self);
  for (const auto* other : {&pair, &triple}) {
    const std::vector<Tensor> b = grads(***other);
    REQUIRE(a.size() == b.size());
    for (size_t t = 0; t < a.size(); ++t) {
      CAPTURE(t);
      double worst = 0;
      for (int64_t i = 0; i < a[t].numel(); ++i) worst = std::max(worst, rel_err(a[t][i], b[t][i]));
      CHECK(worst < 1e-5);
    }
  }
}

TEST_CASE("attention inputs: four inputs, and a key of another length than the value, are errors at the layer") {
  auto four = model_of(cross_yaml("[q, v, k, q]"));
  REQUIRE_FALSE(four.ok());
  CHECK(four.error().message ==
        "cross.yaml:8:7: model.layers[4] (multi_head_attention): multi_head_attention: takes one input "
        "(self-attention), [query, value] or [query, value, key]; got 4 inputs");
  auto lengths = model_of(cross_yaml("[q, v, q]"));
  REQUIRE_FALSE(lengths.ok());
  CHECK(lengths.error().message ==
        "cross.yaml:7:7: model.layers[3] (multi_head_attention): multi_head_attention: key and value must have the "
        "same length (time steps); got key [4, 6] and value [3, 5] (q: [4, 6], v: [3, 5], q: [4, 6])");
}

}  // namespace
}  // namespace dtrain
