// multi_head_attention and its three-input core: PyTorch float64 references
// for the core (Tq != Tk, different input sizes), finite differences, the
// causal mask, attention dropout (its mask, determinism, batch-split
// independence), the debug device and bfloat16 compute, configuration errors.
#include <doctest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "config_schema/job_loader.hpp"
#include "engine/layers/attention.hpp"
#include "engine/kernels/dropout.hpp"
#include "engine/layers/dropout.hpp"
#include "engine/layers/registry.hpp"
#include "engine/model/model.hpp"
#include "engine/ops/support.hpp"
#include "tests/engine/layers/layer_test_util.hpp"

namespace dtrain {
namespace {

using nlohmann::json;

Tensor tensor_of(const json& j) {
  return Tensor::from(j.at("shape").get<Shape>(), j.at("data").get<std::vector<float>>());
}

AttentionOptions options_of(const json& l) {
  AttentionOptions o;
  o.num_heads = l.at("num_heads").get<int64_t>();
  o.key_dim = l.at("key_dim").get<int64_t>();
  o.value_dim = l.value("value_dim", int64_t{0});
  o.output_dim = l.value("output_shape", int64_t{0});
  o.use_bias = l.value("use_bias", true);
  o.causal = l.value("use_causal_mask", false);
  return o;
}

ForwardContext training(uint64_t seed, int64_t step, int64_t offset = 0) {
  ForwardContext c;
  c.training = true;
  c.seed = seed;
  c.step = step;
  c.example_offset = offset;
  return c;
}

AttentionOptions self_options(int64_t heads, int64_t key_dim, bool causal, bool use_bias = true, float dropout = 0.0f) {
  AttentionOptions o;
  o.num_heads = heads;
  o.key_dim = key_dim;
  o.causal = causal;
  o.use_bias = use_bias;
  o.dropout = dropout;
  return o;
}

Tensor run(const Layer& layer, const std::vector<Tensor>& params, const Tensor& x, const ForwardContext& ctx = {}) {
  std::vector<Tensor> p = params;
  Tensor y;
  LayerCache cache;
  layer.forward(ctx, p, x, y, cache);
  return y.to_host().clone();
}

// The core with two of its inputs held fixed and the third as the Layer's
// input, so test::check_gradients can difference each input in turn.
class CoreOnOneInput : public Layer {
 public:
  CoreOnOneInput(const AttentionCore& core, std::vector<Tensor> inputs, int which)
      : core_(core), inputs_(std::move(inputs)), which_(which) {}
  std::string type() const override { return "core"; }
  Result<Shape> build(const Shape&) override { return Shape{}; }
  std::vector<ParamSpec> params() const override { return core_.params(); }
  void forward(const ForwardContext& ctx, std::span<Tensor> params, const Tensor& x, Tensor& y,
               LayerCache& cache) const override {
    const auto in = with(x);
    core_.forward(ctx, params, in[0], in[1], in[2], y, cache);
  }
  void backward(const ForwardContext& ctx, std::span<const Tensor> params, std::span<Tensor> grads, const Tensor& x,
                const Tensor&, const Tensor& dy, Tensor* dx, const LayerCache& cache) const override {
    const auto in = with(x);
    Tensor d[3];
    Tensor* out[3] = {&d[0], &d[1], &d[2]};
    out[static_cast<size_t>(which_)] = dx;
    core_.backward(ctx, params, grads, in[0], in[1], in[2], dy, out[0], out[1], out[2], cache);
  }

 private:
  std::vector<Tensor> with(const Tensor& x) const {
    std::vector<Tensor> in = inputs_;
    in[static_cast<size_t>(which_)] = x;
    return in;
  }
  const AttentionCore& core_;
  std::vector<Tensor> inputs_;
  int which_;
};

json load_refs() {
  std::ifstream in(std::string(DTRAIN_SOURCE_ROOT) + "/tests/engine/layers/reference/layer_refs.json");
  REQUIRE(in.good());
  return json::parse(in);
}

TEST_CASE("attention core: query, key and value of different sizes match PyTorch float64 references") {
  const json refs = load_refs();
  REQUIRE(refs.at("attention_core_cases").size() == 2);
  for (const json& c : refs.at("attention_core_cases")) {
    const std::string name = c.at("name").get<std::string>();
    CAPTURE(name);
    AttentionCore core(options_of(c.at("layer")), "core");
    std::vector<Tensor> in;
    for (const json& t : c.at("inputs")) in.push_back(tensor_of(t));
    auto example = [](const Tensor& t) { return Shape(t.shape().begin() + 1, t.shape().end()); };
    auto out = core.build(example(in[0]), example(in[1]), example(in[2]));
    REQUIRE(out.ok());
    const Tensor want_y = tensor_of(c.at("y"));
    CHECK(*out == example(want_y));
    std::vector<Tensor> params;
    for (const json& p : c.at("params")) params.push_back(tensor_of(p));
    const auto specs = core.params();
    REQUIRE(specs.size() == params.size());
    for (size_t i = 0; i < specs.size(); ++i) CHECK(specs[i].shape == params[i].shape());

    const ForwardContext ctx;
    Tensor y;
    LayerCache cache;
    core.forward(ctx, params, in[0], in[1], in[2], y, cache);
    test::check_close(y, want_y, 1e-4, name + " y");
    std::vector<Tensor> grads;
    for (const Tensor& p : params) grads.emplace_back(p.shape(), 1e6f);
    Tensor d[3];
    core.backward(ctx, params, grads, in[0], in[1], in[2], tensor_of(c.at("dy")), &d[0], &d[1], &d[2], cache);
    const char* names[] = {"dquery", "dkey", "dvalue"};
    for (size_t i = 0; i < 3; ++i) test::check_close(d[i], tensor_of(c.at("dinputs")[i]), 1e-4, name + " " + names[i]);
    for (size_t i = 0; i < params.size(); ++i) {
      test::check_close_or_zero(grads[i], tensor_of(c.at("dparams")[i]), 1e-4, name + " d" + specs[i].name);
    }
    // Without input gradients the param gradients are the same.
    std::vector<Tensor> again;
    for (const Tensor& p : params) again.emplace_back(p.shape(), 1e6f);
    core.backward(ctx, params, again, in[0], in[1], in[2], tensor_of(c.at("dy")), nullptr, nullptr, nullptr, cache);
    for (size_t i = 0; i < params.size(); ++i) CHECK(again[i].to_vector() == grads[i].to_vector());
  }
}

// test::check_gradients, except for key/bias, whose gradient is exactly zero
// (adding q_i . b_k to every score of row i leaves the softmax unchanged): its
// finite differences are rounding noise, so it is checked for zero here and
// for not mattering in "key/bias does not change the output".
void check_attention_gradients(const Layer& layer, const std::vector<Tensor>& params, const Tensor& x,
                               const test::GradCheckOptions& opt) {
  const auto specs = layer.params();
  const test::GradCheckReport r = test::gradient_errors(layer, params, x, opt);
  CHECK_MESSAGE(r.dx <= opt.tol, "dx worst relative error " << r.dx);
  for (size_t i = 0; i < specs.size(); ++i) {
    if (specs[i].name == "key/bias") continue;
    CHECK_MESSAGE(r.params[i] <= opt.tol, "d" << specs[i].name << " worst relative error " << r.params[i]);
  }
  std::vector<Tensor> p = params, grads;
  for (const Tensor& t : params) grads.emplace_back(t.shape(), 1e6f);
  Tensor y, dx;
  LayerCache cache;
  layer.forward(opt.ctx, p, x, y, cache);
  layer.backward(opt.ctx, p, grads, x, y, test::random_tensor(y.shape(), 977), &dx, cache);
  CHECK(test::max_abs(dx) > 0);
  for (size_t i = 0; i < specs.size(); ++i) {
    CAPTURE(specs[i].name);
    if (specs[i].name == "key/bias") {
      CHECK(test::max_abs(grads[i]) == 0.0);
    } else {
      CHECK(test::max_abs(grads[i]) > 0);
    }
  }
}

TEST_CASE("attention: key/bias does not change the output (why its gradient is zero)") {
  MultiHeadAttention layer(self_options(2, 3, true), "mha");
  REQUIRE(layer.build({5, 4}).ok());
  auto params = test::make_params(layer, 81);
  REQUIRE(layer.params()[3].name == "key/bias");
  for (int64_t i = 0; i < params[3].numel(); ++i) params[3][i] = 0.1f * static_cast<float>(i);
  const Tensor x = test::random_tensor({2, 5, 4}, 82);
  const Tensor y = run(layer, params, x);
  for (int64_t i = 0; i < params[3].numel(); ++i) params[3][i] -= 1.0f;
  test::check_close(run(layer, params, x), y, 1e-5, "y with key/bias shifted");
  // The query bias, by contrast, matters.
  for (int64_t i = 0; i < params[1].numel(); ++i) params[1][i] += 1.0f;
  double moved = 0;
  const Tensor z = run(layer, params, x);
  for (int64_t i = 0; i < y.numel(); ++i) moved = std::max(moved, double(std::fabs(z[i] - y[i])));
  CHECK(moved > 1e-2);
}

TEST_CASE("attention: gradients match finite differences (self, causal, no bias, the core's three inputs)") {
  test::GradCheckOptions opt;
  opt.eps = 1e-2;
  opt.tol = 2e-2;
  SUBCASE("self-attention") {
    for (const bool causal : {false, true}) {
      for (const bool use_bias : {true, false}) {
        CAPTURE(causal);
        CAPTURE(use_bias);
        MultiHeadAttention layer(self_options(2, 3, causal, use_bias), "mha");
        REQUIRE(layer.build({4, 5}).ok());
        check_attention_gradients(layer, test::make_params(layer, 11), test::random_tensor({2, 4, 5}, 12), opt);
      }
    }
  }
  SUBCASE("self-attention with value_dim and output_shape, in training with attention dropout") {
    AttentionOptions o = self_options(2, 2, true, true, 0.3f);
    o.value_dim = 3;
    o.output_dim = 4;
    MultiHeadAttention layer(o, "mha");
    REQUIRE(layer.build({5, 3}).ok());
    opt.ctx = training(3, 8, 20);
    check_attention_gradients(layer, test::make_params(layer, 21), test::random_tensor({2, 5, 3}, 22), opt);
  }
  SUBCASE("the core, each of query, key and value in turn (Tq != Tk, causal)") {
    AttentionOptions o = self_options(2, 3, true);
    o.value_dim = 2;
    o.output_dim = 3;
    AttentionCore core(o, "core");
    REQUIRE(core.build({3, 4}, {5, 2}, {5, 3}).ok());
    const std::vector<Tensor> inputs{test::random_tensor({2, 3, 4}, 31), test::random_tensor({2, 5, 2}, 32),
                                     test::random_tensor({2, 5, 3}, 33)};
    for (int which = 0; which < 3; ++which) {
      CAPTURE(which);
      CoreOnOneInput layer(core, inputs, which);
      check_attention_gradients(layer, test::make_params(layer, 34), inputs[static_cast<size_t>(which)], opt);
    }
  }
}

// The gradient checks above can fail: the causal layer's backward paired with
// the unmasked layer's forward (a mask forgotten on one side) is rejected.
TEST_CASE("attention: the gradient check rejects a backward whose mask differs from the forward's") {
  class Mismatched : public Layer {
   public:
    Mismatched(const Layer& fwd, const Layer& bwd) : fwd_(fwd), bwd_(bwd) {}
    std::string type() const override { return "mismatched"; }
    Result<Shape> build(const Shape& s) override { return s; }
    std::vector<ParamSpec> params() const override { return fwd_.params(); }
    void forward(const ForwardContext& c, std::span<Tensor> p, const Tensor& x, Tensor& y,
                 LayerCache& cache) const override {
      Tensor unused;
      bwd_.forward(c, p, x, unused, cache);  // what the backward reads
      LayerCache other;
      fwd_.forward(c, p, x, y, other);
    }
    void backward(const ForwardContext& c, std::span<const Tensor> p, std::span<Tensor> g, const Tensor& x,
                  const Tensor& y, const Tensor& dy, Tensor* dx, const LayerCache& cache) const override {
      bwd_.backward(c, p, g, x, y, dy, dx, cache);
    }

   private:
    const Layer &fwd_, &bwd_;
  };
  MultiHeadAttention plain(self_options(2, 3, false), "mha"), causal(self_options(2, 3, true), "mha");
  REQUIRE(plain.build({4, 5}).ok());
  REQUIRE(causal.build({4, 5}).ok());
  const auto params = test::make_params(plain, 11);
  const Tensor x = test::random_tensor({2, 4, 5}, 12);
  const auto same = test::gradient_errors(Mismatched(causal, causal), params, x);
  CHECK(same.dx < 2e-2);
  const auto wrong = test::gradient_errors(Mismatched(plain, causal), params, x);
  CHECK(wrong.dx > 0.1);
  CHECK(wrong.params.at(0) > 0.1);  // query/kernel
}

TEST_CASE("attention: with the causal mask, changing position j leaves the outputs before j unchanged") {
  for (const bool causal : {true, false}) {
    CAPTURE(causal);
    MultiHeadAttention layer(self_options(2, 3, causal), "mha");
    REQUIRE(layer.build({6, 4}).ok());
    const auto params = test::make_params(layer, 41);
    const Tensor x = test::random_tensor({2, 6, 4}, 42);
    const Tensor y = run(layer, params, x);
    for (int64_t j = 0; j < 6; ++j) {
      CAPTURE(j);
      Tensor changed = x.clone();
      for (int64_t f = 0; f < 4; ++f) changed[(1 * 6 + j) * 4 + f] += 0.5f;  // example 1, position j
      const Tensor z = run(layer, params, changed);
      bool before_same = true, from_j_changed = false, other_example_same = true;
      for (int64_t i = 0; i < 6; ++i) {
        for (int64_t f = 0; f < 4; ++f) {
          const int64_t e0 = (0 * 6 + i) * 4 + f, e1 = (1 * 6 + i) * 4 + f;
          other_example_same = other_example_same && z[e0] == y[e0];
          if (i < j) before_same = before_same && z[e1] == y[e1];
          if (i >= j) from_j_changed = from_j_changed || std::fabs(z[e1] - y[e1]) > 1e-4f;
        }
      }
      CHECK(other_example_same);
      CHECK(from_j_changed);
      // Without the mask every position sees position j.
      if (j > 0) CHECK(before_same == causal);
    }
  }
}

// Double-precision attention with the documented dropout mask, one example:
// x (T, d) -> y (T, d_out), mask element (h, i, j) of example g at
// dropout_mask(key, g)[(h*T + i)*T + j]. Params as the layer's, with bias.
std::vector<double> naive_self_attention(const std::vector<Tensor>& p, const float* x, int64_t t, int64_t d,
                                         int64_t heads, int64_t dk, bool causal, const std::vector<float>* mask) {
  const Tensor &wq = p[0], &bq = p[1], &wk = p[2], &bk = p[3], &wv = p[4], &bv = p[5], &wo = p[6], &bo = p[7];
  const int64_t out = bo.numel();
  std::vector<double> y(static_cast<size_t>(t * out));
  for (int64_t i = 0; i < t; ++i) {
    for (int64_t o = 0; o < out; ++o) y[static_cast<size_t>(i * out + o)] = bo[o];
  }
  auto proj = [&](const Tensor& w, const Tensor& b, int64_t pos, int64_t h, int64_t e) {
    double acc = b[h * dk + e];
    for (int64_t f = 0; f < d; ++f) acc += double{x[pos * d + f]} * w[(f * heads + h) * dk + e];
    return acc;
  };
  for (int64_t h = 0; h < heads; ++h) {
    for (int64_t i = 0; i < t; ++i) {
      std::vector<double> s(static_cast<size_t>(t), -INFINITY);
      double top = -INFINITY;
      for (int64_t j = 0; j < t && (!causal || j <= i); ++j) {
        double dot = 0;
        for (int64_t e = 0; e < dk; ++e) dot += proj(wq, bq, i, h, e) * proj(wk, bk, j, h, e);
        s[static_cast<size_t>(j)] = dot / std::sqrt(double(dk));
        top = std::max(top, s[static_cast<size_t>(j)]);
      }
      double sum = 0;
      for (double& v : s) sum += (v = std::exp(v - top));
      for (int64_t j = 0; j < t; ++j) {
        double pj = s[static_cast<size_t>(j)] / sum;
        if (mask != nullptr) pj *= (*mask)[static_cast<size_t>((h * t + i) * t + j)];
        for (int64_t e = 0; e < dk; ++e) {
          const double v = proj(wv, bv, j, h, e);
          for (int64_t o = 0; o < out; ++o) y[static_cast<size_t>(i * out + o)] += pj * v * wo[(h * dk + e) * out + o];
        }
      }
    }
  }
  return y;
}

TEST_CASE("attention dropout: the mask of example g is dropout_mask(key(seed, step), g) over (head, query, key)") {
  const float rate = 0.4f;
  MultiHeadAttention layer(self_options(2, 3, false, true, rate), "mha");
  REQUIRE(layer.build({5, 4}).ok());
  const auto params = test::make_params(layer, 51);
  const Tensor x = test::random_tensor({3, 5, 4}, 52);
  const ForwardContext ctx = training(7, 13, 40);
  const Tensor y = run(layer, params, x, ctx);
  const uint64_t key = layer.core().mask_key(7, 13);
  int64_t dropped = 0;
  for (int64_t b = 0; b < 3; ++b) {
    CAPTURE(b);
    std::vector<float> mask(2 * 5 * 5);
    kernels::dropout_mask(key, static_cast<uint64_t>(40 + b), rate, mask.data(), static_cast<int64_t>(mask.size()));
    for (float m : mask) dropped += m == 0.0f;
    const auto want = naive_self_attention(params, x.data() + b * 20, 5, 4, 2, 3, false, &mask);
    double worst = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      worst = std::max(worst, std::fabs(y[b * 20 + static_cast<int64_t>(i)] - want[i]));
    }
    CHECK(worst < 1e-5);
    // The same example without dropout differs: the mask did something.
    const auto plain = naive_self_attention(params, x.data() + b * 20, 5, 4, 2, 3, false, nullptr);
    double moved = 0;
    for (size_t i = 0; i < plain.size(); ++i) moved = std::max(moved, std::fabs(plain[i] - want[i]));
    CHECK(moved > 1e-2);
  }
  CHECK(dropped > 0);
  // At inference there is no dropout.
  const Tensor inference = run(layer, params, x);
  const auto plain0 = naive_self_attention(params, x.data(), 5, 4, 2, 3, false, nullptr);
  for (size_t i = 0; i < plain0.size(); ++i) {
    CHECK(inference[static_cast<int64_t>(i)] == doctest::Approx(plain0[i]).epsilon(1e-5));
  }
}

TEST_CASE("attention dropout: deterministic, keyed by seed, step and global example, whatever the batch split") {
  MultiHeadAttention layer(self_options(2, 3, true, true, 0.3f), "mha");
  REQUIRE(layer.build({6, 4}).ok());
  const auto params = test::make_params(layer, 61);
  const Tensor x = test::random_tensor({5, 6, 4}, 62);
  const Tensor whole = run(layer, params, x, training(42, 7));
  CHECK(run(layer, params, x, training(42, 7)).to_vector() == whole.to_vector());
  CHECK(run(layer, params, x, training(42, 8)).to_vector() != whole.to_vector());
  CHECK(run(layer, params, x, training(43, 7)).to_vector() != whole.to_vector());
  MultiHeadAttention other(self_options(2, 3, true, true, 0.3f), "mha_1");
  REQUIRE(other.build({6, 4}).ok());
  CHECK(run(other, params, x, training(42, 7)).to_vector() != whole.to_vector());

  const Tensor first = run(layer, params, x.rows(0, 2).clone(), training(42, 7, 0));
  const Tensor second = run(layer, params, x.rows(2, 5).clone(), training(42, 7, 2));
  std::vector<float> joined = first.to_vector();
  const auto tail = second.to_vector();
  joined.insert(joined.end(), tail.begin(), tail.end());
  const auto w = whole.to_vector();
  REQUIRE(joined.size() == w.size());
  // Row-for-row the same products; oneDNN may block a batch of 2 differently
  // from one of 5, so allow float32 rounding, far below a dropped element.
  double worst = 0;
  for (size_t i = 0; i < w.size(); ++i) worst = std::max(worst, double(std::fabs(joined[i] - w[i])));
  CHECK(worst < 1e-5);
  // The global example index matters: the second part at offset 0 differs.
  const auto shifted = run(layer, params, x.rows(2, 5).clone(), training(42, 7, 0)).to_vector();
  double moved = 0;
  for (size_t i = 0; i < tail.size(); ++i) moved = std::max(moved, double(std::fabs(shifted[i] - tail[i])));
  CHECK(moved > 1e-2);
}

struct Pass {
  Tensor y, dx;
  std::vector<Tensor> grads;
};

Pass run_on(const Layer& layer, const std::vector<Tensor>& params, const Tensor& x, const Tensor& dy,
            const Device& device, DType compute) {
  const ops::Context oc{device, compute};
  ForwardContext ctx = training(5, 3, 10);
  ctx.ops = &oc;
  std::vector<Tensor> p, g;
  for (const Tensor& t : params) {
    p.push_back(t.to(device));
    g.push_back(Tensor::empty(t.shape(), DType::f32, device));
  }
  Tensor y, dx;
  LayerCache cache;
  const Tensor xd = x.to(device);
  layer.forward(ctx, p, xd, y, cache);
  layer.backward(ctx, p, g, xd, y, dy.to(device), &dx, cache);
  Pass out{y.to_host().clone(), dx.to_host().clone(), {}};
  for (const Tensor& t : g) out.grads.push_back(t.to_host().clone());
  return out;
}

double rel_l2(const Tensor& a, const Tensor& b) {
  double num = 0, den = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    num += (double{a[i]} - b[i]) * (double{a[i]} - b[i]);
    den += double{b[i]} * b[i];
  }
  return std::sqrt(num / std::max(den, 1e-30));
}

// float32 on the debug device runs the same kernels as on the host: exact.
// bfloat16 rounds the operands of the projections and of both per-head
// products (8 significant bits); measured here, relative L2 against float32:
// output 0.0032, input gradient 0.0050, parameter gradients up to 0.0076
// (the value projection's bias); held to 2e-2 for outputs and 3e-2 for
// gradients.
TEST_CASE("attention on the debug device equals the host; bfloat16 compute stays within its measured tolerance") {
  AttentionOptions o = self_options(2, 4, true, true, 0.2f);
  o.value_dim = 3;
  MultiHeadAttention layer(o, "mha");
  REQUIRE(layer.build({7, 6}).ok());
  const auto params = test::make_params(layer, 71);
  const Tensor x = test::random_tensor({3, 7, 6}, 72);
  const Tensor dy = test::random_tensor({3, 7, 6}, 73);
  const Device debug{DeviceKind::debug, 0};
  const Pass ref = run_on(layer, params, x, dy, kHost, DType::f32);
  const Pass dbg = run_on(layer, params, x, dy, debug, DType::f32);
  CHECK(dbg.y.to_vector() == ref.y.to_vector());
  CHECK(dbg.dx.to_vector() == ref.dx.to_vector());
  for (size_t i = 0; i < ref.grads.size(); ++i) CHECK(dbg.grads[i].to_vector() == ref.grads[i].to_vector());

  const Pass bf = run_on(layer, params, x, dy, kHost, DType::bf16);
  const Pass bf_dbg = run_on(layer, params, x, dy, debug, DType::bf16);
  CHECK(bf_dbg.y.to_vector() == bf.y.to_vector());
  CHECK(bf_dbg.dx.to_vector() == bf.dx.to_vector());
  const auto specs = layer.params();
  MESSAGE("bf16 vs f32 relative L2: y " << rel_l2(bf.y, ref.y) << ", dx " << rel_l2(bf.dx, ref.dx));
  CHECK(rel_l2(bf.y, ref.y) > 1e-4);  // rounding shows: not float32 in disguise
  CHECK(rel_l2(bf.y, ref.y) < 2e-2);
  CHECK(rel_l2(bf.dx, ref.dx) < 3e-2);
  for (size_t i = 0; i < ref.grads.size(); ++i) {
    CAPTURE(specs[i].name);
    CHECK(bf_dbg.grads[i].to_vector() == bf.grads[i].to_vector());
    if (specs[i].name == "key/bias") {  // exactly zero under every policy
      CHECK(test::max_abs(bf.grads[i]) == 0.0);
      CHECK(test::max_abs(ref.grads[i]) == 0.0);
      continue;
    }
    MESSAGE("bf16 vs f32 relative L2: d" << specs[i].name << " " << rel_l2(bf.grads[i], ref.grads[i]));
    CHECK(rel_l2(bf.grads[i], ref.grads[i]) < 3e-2);
  }
}

}  // namespace
}  // namespace dtrain
