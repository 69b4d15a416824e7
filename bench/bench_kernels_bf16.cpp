// dtrain_bench_kernels_bf16: mnist_cnn's CPU kernel calls for one training
// step (conv, max-pool, dense; forward, backward-data, backward-weights) in
// f32 against bf16 with the casts bf16 training would add, in two plans:
//   bf16      activations stay bf16 between layers; casts: the input batch,
//             the f32 master weights (once per step), d(logits)
//   bf16/f32a activations stay f32 between layers; bf16 kernels write f32 and
//             each kernel's activation inputs are cast to bf16 first
// Every call of each plan is first verified against the f32 call on the same
// bf16-rounded inputs; then the plans run in turn, in a rotating order, for
// --rounds rounds, and the table reports f32 time / plan time per call and per
// step as the median [min, max] over rounds. Also times the bulk f32 <-> bf16
// casts against oneDNN's reorder (the choice engine/kernels/cast.cpp made).
//   dtrain_bench_kernels_bf16 [--batch 64 --batch 256] [--rounds 5] [--reps 15]
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "engine/kernels/cast.hpp"
#include "engine/kernels/conv.hpp"
#include "engine/kernels/matmul.hpp"
#include "engine/kernels/onednn_context.hpp"
#include "engine/kernels/pool.hpp"
#include "engine/base/status.hpp"

namespace {

using namespace dtrain::kernels;
using Clock = std::chrono::steady_clock;

// An input held both ways with the same values (random, rounded to bf16).
struct Input {
  std::vector<float> f;
  std::vector<uint16_t> h;
};

Input random_input(size_t n, uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  Input in{std::vector<float>(n), std::vector<uint16_t>(n)};
  for (size_t i = 0; i < n; ++i) {
    in.h[i] = float_to_bf16(dist(gen));
    in.f[i] = bf16_to_float(in.h[i]);
  }
  return in;
}

// Max-pool input (n, h, w, c) whose 2x2 windows hold distinct values (so the
// f32 and bf16 backward route dy alike): 4 * random + position in window,
// small integers, exact in bf16.
Input pool_input(int64_t n, int64_t h, int64_t w, int64_t c, uint64_t seed) {
  std::mt19937_64 gen(seed);
  Input in{std::vector<float>(static_cast<size_t>(n * h * w * c)), {}};
  size_t i = 0;
  for (int64_t b = 0; b < n; ++b)
    for (int64_t y = 0; y < h; ++y)
      for (int64_t x = 0; x < w; ++x)
        for (int64_t k = 0; k < c; ++k) in.f[i++] = static_cast<float>(4 * (gen() % 64) + (y % 2) * 2 + x % 2);
  in.h.resize(in.f.size());
  for (size_t j = 0; j < in.f.size(); ++j) in.h[j] = float_to_bf16(in.f[j]);
  return in;
}

// A result buffer of one type.
struct Out {
  KType type = KType::kF32;
  std::vector<float> f;
  std::vector<uint16_t> h;
  Out(KType t, size_t n) : type(t), f(t == KType::kF32 ? n : 0), h(t == KType::kBf16 ? n : 0) {}
  void* data() { return type == KType::kF32 ? static_cast<void*>(f.data()) : h.data(); }
  std::vector<float> values() const {
    if (type == KType::kF32) return f;
    std::vector<float> v(h.size());
    cast_bf16_to_f32(h.data(), v.data(), static_cast<int64_t>(h.size()));
    return v;
  }
};

struct Op {
  std::string name;
  bool in_step = true;  // false: a call training does not make (the first layer's dx)
  std::function<void()> run;
  std::vector<Out*> outs;  // compared with the f32 plan's op of the same name
};

struct Plan {
  std::string name;
  std::vector<Op> ops;
  std::vector<std::unique_ptr<Out>> outs;
  std::vector<std::vector<uint16_t>> scratch;  // cast targets
  Out* out(KType t, size_t n) { return outs.emplace_back(std::make_unique<Out>(t, n)).get(); }
  uint16_t* cast_target(size_t n) { return scratch.emplace_back(n).data(); }
};

Conv2dShape conv_shape(int64_t n, int64_t hw, int64_t ic, int64_t oc) {
  Conv2dShape s;
  s.n = n;
  s.ih = s.iw = s.oh = s.ow = hw;
  s.ic = ic;
  s.oc = oc;
  s.kh = s.kw = 3;
  s.pad_top = s.pad_left = s.pad_bottom = s.pad_right = 1;  // SAME
  s.relu = true;
  return s;
}

Pool2dShape pool_shape(int64_t n, int64_t hw, int64_t c) {
  Pool2dShape s;
  s.n = n;
  s.ih = s.iw = hw;
  s.oh = s.ow = hw / 2;
  s.c = c;
  s.kh = s.kw = s.sh = s.sw = 2;
  return s;
}

// mnist_cnn (sample_configs/mnist_cnn.yaml) at batch n: the inputs of every
// call, prepared once; calls read these rather than each other's results so
// that each plan's call can be compared with f32's on identical inputs.
struct Net {
  int64_t n;
  Conv2dShape c1, c2;
  Pool2dShape p1, p2;
  Input x0, w1, b1, y1, p1_out, w2, b2, y2, p2_out, w3, b3, h1, w4, b4, dlogits, dh1, dp2, dy2, dp1, dy1;
  explicit Net(int64_t batch)
      : n(batch),
        c1(conv_shape(batch, 28, 1, 32)),
        c2(conv_shape(batch, 14, 32, 64)),
        p1(pool_shape(batch, 28, 32)),
        p2(pool_shape(batch, 14, 64)),
        x0(random_input(static_cast<size_t>(batch * 28 * 28), 1)),
        w1(random_input(3 * 3 * 1 * 32, 2)),
        b1(random_input(32, 3)),
        y1(pool_input(batch, 28, 28, 32, 4)),
        p1_out(random_input(static_cast<size_t>(batch * 14 * 14 * 32), 5)),
        w2(random_input(3 * 3 * 32 * 64, 6)),
        b2(random_input(64, 7)),
        y2(pool_input(batch, 14, 14, 64, 8)),
        p2_out(random_input(static_cast<size_t>(batch * 3136), 9)),
        w3(random_input(3136 * 128, 10)),
        b3(random_input(128, 11)),
        h1(random_input(static_cast<size_t>(batch * 128), 12)),
        w4(random_input(128 * 10, 13)),
        b4(random_input(10, 14)),
        dlogits(random_input(static_cast<size_t>(batch * 10), 15)),
        dh1(random_input(static_cast<size_t>(batch * 128), 16)),
        dp2(random_input(static_cast<size_t>(batch * 3136), 17)),
        dy2(random_input(static_cast<size_t>(batch * 14 * 14 * 64), 18)),
        dp1(random_input(static_cast<size_t>(batch * 14 * 14 * 32), 19)),
        dy1(random_input(static_cast<size_t>(batch * 28 * 28 * 32), 20)) {}
};

enum class Kind { kF32, kBf16, kBf16F32Act };

// The step's calls in `kind`'s types (plus its casts), in training order.
Plan make_plan(Net& net, Kind kind) {
  Plan p;
  p.name = kind == Kind::kF32 ? "f32" : kind == Kind::kBf16 ? "bf16" : "bf16/f32a";
  const bool bf16 = kind != Kind::kF32;
  const KType in = bf16 ? KType::kBf16 : KType::kF32;                 // kernel inputs
  const KType act = kind == Kind::kBf16 ? KType::kBf16 : KType::kF32;  // activations between layers
  // (By value: the ops outlive this function.)
  auto ptr = [bf16](const Input& t) -> const void* { return bf16 ? static_cast<const void*>(t.h.data()) : t.f.data(); };
  auto cast = [&](const std::string& name, std::vector<const Input*> ts) {
    size_t total = 0;
    for (const Input* t : ts) total += t->f.size();
    uint16_t* dst = p.cast_target(total);
    p.ops.push_back({"cast " + name, true, [ts, dst] {
                       uint16_t* d = dst;
                       for (const Input* t : ts) {
                         cast_f32_to_bf16(t->f.data(), d, static_cast<int64_t>(t->f.size()));
                         d += t->f.size();
                       }
                     }, {}});
  };
  // Activation inputs a bf16 kernel reads are cast first in the f32a plan.
  auto cast_act = [&](const std::string& name, const Input& t) {
    if (kind == Kind::kBf16F32Act) cast(name, {&t});
  };
  Conv2dShape c1 = net.c1, c2 = net.c2;
  for (Conv2dShape* c : {&c1, &c2}) {
    c->x_type = c->w_type = c->dy_type = in;
    c->y_type = c->dx_type = act;
  }
  Pool2dShape p1 = net.p1, p2 = net.p2;
  p1.type = p2.type = act;
  const int64_t n = net.n;
  auto mm = [&](int64_t m, int64_t nn, int64_t k, bool ta, bool tb, KType c_type) {
    MatmulShape s{m, nn, k, ta, tb};
    s.a_type = s.b_type = in;
    s.c_type = c_type;
    return s;
  };
  auto act_ptr = [act](const Input& t) -> const void* {
    return act == KType::kBf16 ? static_cast<const void*>(t.h.data()) : t.f.data();
  };
  auto conv_fwd = [&](const std::string& name, const Conv2dShape& s, const Input& x, const Input& w, const Input& b) {
    Out* y = p.out(s.y_type, static_cast<size_t>(s.n * s.oh * s.ow * s.oc));
    p.ops.push_back({name, true, [=, &x, &w, &b] { conv2d_forward(s, ptr(x), ptr(w), b.f.data(), y->data()); }, {y}});
  };
  auto conv_bwd = [&](const std::string& name, const Conv2dShape& s, const Input& x, const Input& w, const Input& dy,
                      bool dx_in_step) {
    Out* dw = p.out(KType::kF32, w.f.size());
    Out* db = p.out(KType::kF32, static_cast<size_t>(s.oc));
    p.ops.push_back({name + " backward_weights", true,
                     [=, &x, &dy] { conv2d_backward_weights(s, ptr(x), ptr(dy), dw->f.data(), db->f.data()); },
                     {dw, db}});
    Out* dx = p.out(s.dx_type, x.f.size());
    p.ops.push_back({name + " backward_data", dx_in_step,
                     [=, &w, &dy] { conv2d_backward_data(s, ptr(dy), ptr(w), dx->data()); }, {dx}});
  };
  // Adds the forward; returns the backward, which comes later in the step.
  auto pool = [&](const std::string& name, const Pool2dShape& s, const Input& x, const Input& dy) {
    auto* ws = p.cast_target(pool2d_workspace_bytes(s) / 2 + 8);
    Out* y = p.out(s.type, dy.f.size());
    Out* dx = p.out(s.type, x.f.size());
    p.ops.push_back({name + " forward", true, [=, &x] { pool2d_forward(s, act_ptr(x), y->data(), ws); }, {y}});
    return Op{name + " backward", true, [=, &dy] { pool2d_backward(s, act_ptr(dy), dx->data(), ws); }, {dx}};
  };
  auto dense = [&](const std::string& name, const MatmulShape& s, const Input& a, const Input& b, const float* bias) {
    Out* c = p.out(s.c_type, static_cast<size_t>(s.m * s.n));
    p.ops.push_back({name, true, [=, &a, &b] { matmul(s, ptr(a), ptr(b), bias, c->data()); }, {c}});
  };

  // Forward.
  if (bf16) cast("input x", {&net.x0});
  if (bf16) cast("weights (4 tensors)", {&net.w1, &net.w2, &net.w3, &net.w4});
  conv_fwd("conv1 forward+relu", c1, net.x0, net.w1, net.b1);
  const Op pool1_bwd = pool("pool1", p1, net.y1, net.dp1);
  cast_act("p1", net.p1_out);
  conv_fwd("conv2 forward+relu", c2, net.p1_out, net.w2, net.b2);
  const Op pool2_bwd = pool("pool2", p2, net.y2, net.dp2);
  cast_act("p2", net.p2_out);
  dense("dense1 forward", mm(n, 128, 3136, false, false, act), net.p2_out, net.w3, net.b3.f.data());
  cast_act("h1", net.h1);
  dense("dense2 forward", mm(n, 10, 128, false, false, KType::kF32), net.h1, net.w4, net.b4.f.data());
  // Backward.
  if (bf16) cast("d(logits)", {&net.dlogits});
  dense("dense2 backward_weights", mm(128, 10, n, true, false, KType::kF32), net.h1, net.dlogits, nullptr);
  dense("dense2 backward_data", mm(n, 128, 10, false, true, act), net.dlogits, net.w4, nullptr);
  cast_act("dh1", net.dh1);
  dense("dense1 backward_weights", mm(3136, 128, n, true, false, KType::kF32), net.p2_out, net.dh1, nullptr);
  dense("dense1 backward_data", mm(n, 3136, 128, false, true, act), net.dh1, net.w3, nullptr);
  p.ops.push_back(pool2_bwd);
  cast_act("dy2", net.dy2);
  conv_bwd("conv2", c2, net.p1_out, net.w2, net.dy2, true);
  p.ops.push_back(pool1_bwd);
  cast_act("dy1", net.dy1);
  conv_bwd("conv1", c1, net.x0, net.w1, net.dy1, false);
  return p;
}

// Runs every op once and compares its results with the f32 plan's op of the
// same name: f32 results (from identical bf16-valued inputs) within 1e-5 of
// max |f32 result|, bf16 results within 1e-2 of it. Returns the failures.
int verify(Plan& f32, Plan& other) {
  for (Plan* p : {&f32, &other})
    for (Op& op : p->ops) op.run();
  std::map<std::string, const Op*> ref;
  for (const Op& op : f32.ops) ref[op.name] = &op;
  int failures = 0;
  for (const Op& op : other.ops) {
    const auto it = ref.find(op.name);
    if (it == ref.end()) continue;  // a cast
    for (size_t k = 0; k < op.outs.size(); ++k) {
      const std::vector<float> got = op.outs[k]->values(), want = it->second->outs[k]->values();
      double scale = 1e-30, err = 0.0;
      for (float w : want) scale = std::max(scale, double(std::fabs(w)));
      for (size_t i = 0; i < want.size(); ++i) err = std::max(err, std::fabs(double(got[i]) - want[i]));
      const double tol = op.outs[k]->type == KType::kBf16 ? 1e-2 : 1e-5;
      if (!(err / scale <= tol)) {
        std::printf("VERIFY FAILED: %s %s output %zu: max error %.3g of max |f32| (tolerance %.0e)\n",
                    other.name.c_str(), op.name.c_str(), k, err / scale, tol);
        ++failures;
      }
    }
  }
  return failures;
}

template <class F>
double median_us(F&& f, int reps) {
  for (int i = 0; i < 2; ++i) f();
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    const auto start = Clock::now();
    f();
    t.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count());
  }
  std::nth_element(t.begin(), t.begin() + reps / 2, t.end());
  return t[static_cast<size_t>(reps / 2)];
}

// One round's timings of a plan: median per op and of the whole step.
struct Timing {
  std::map<std::string, double> op_us;
  double step_us = 0;
};

Timing time_plan(Plan& p, int reps) {
  Timing t;
  for (Op& op : p.ops) t.op_us[op.name] = median_us(op.run, reps);
  t.step_us = median_us([&] {
    for (Op& op : p.ops)
      if (op.in_step) op.run();
  }, reps);
  return t;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

// "1.23x [1.10, 1.31]": median and range of f32 time / plan time over rounds.
std::string ratio_str(const std::vector<double>& f32, const std::vector<double>& other) {
  std::vector<double> r;
  for (size_t i = 0; i < f32.size(); ++i) r.push_back(f32[i] / other[i]);
  const auto [lo, hi] = std::minmax_element(r.begin(), r.end());
  char buf[64];
  std::snprintf(buf, sizeof buf, "%5.2fx [%.2f, %.2f]", median(r), *lo, *hi);
  return buf;
}

void bench_batch(int64_t batch, int rounds, int reps) {
  Net net(batch);
  std::vector<Plan> plans;
  for (Kind k : {Kind::kF32, Kind::kBf16, Kind::kBf16F32Act}) plans.push_back(make_plan(net, k));
  int failures = 0;
  for (size_t i = 1; i < plans.size(); ++i) failures += verify(plans[0], plans[i]);
  if (failures > 0) {
    std::printf("batch %ld: %d verification failures; not timing\n", static_cast<long>(batch), failures);
    std::exit(1);
  }
  std::printf("\nbatch %ld: verified (every bf16 call against f32 on the same inputs); %d rounds x %d reps\n",
              static_cast<long>(batch), rounds, reps);
  std::vector<std::vector<Timing>> timings(plans.size());
  for (int r = 0; r < rounds; ++r) {
    for (size_t i = 0; i < plans.size(); ++i) {  // rotate the order each round
      const size_t k = (i + static_cast<size_t>(r)) % plans.size();
      timings[k].push_back(time_plan(plans[k], reps));
    }
  }
  auto series = [&](size_t plan, const std::string& op) {
    std::vector<double> v;
    for (const Timing& t : timings[plan]) v.push_back(op.empty() ? t.step_us : t.op_us.at(op));
    return v;
  };
  std::printf("%-32s %9s %9s %9s   %-22s %-22s\n", "call (median us over rounds)", "f32", "bf16", "bf16/f32a",
              "f32/bf16", "f32/(bf16/f32a)");
  std::vector<std::string> names;  // every op name once, in the bf16/f32a plan's order (a superset)
  for (const Op& op : plans[2].ops) names.push_back(op.name);
  for (const std::string& name : names) {
    std::string cells[3], ratios[2];
    for (size_t k = 0; k < 3; ++k) {
      const bool has = timings[k][0].op_us.count(name) > 0;
      char buf[32];
      std::snprintf(buf, sizeof buf, "%9.0f", has ? median(series(k, name)) : 0.0);
      cells[k] = has ? buf : "        -";
      if (k > 0 && has && timings[0][0].op_us.count(name) > 0) ratios[k - 1] = ratio_str(series(0, name), series(k, name));
    }
    const bool in_step = std::any_of(plans[2].ops.begin(), plans[2].ops.end(),
                                     [&](const Op& op) { return op.name == name && op.in_step; });
    std::printf("%-32s %s %s %s   %-22s %-22s\n", (name + (in_step ? "" : " *")).c_str(), cells[0].c_str(),
                cells[1].c_str(), cells[2].c_str(), ratios[0].c_str(), ratios[1].c_str());
  }
  std::printf("%-32s %9.0f %9.0f %9.0f   %-22s %-22s\n", "training step (timed as a whole)", median(series(0, "")),
              median(series(1, "")), median(series(2, "")), ratio_str(series(0, ""), series(1, "")).c_str(),
              ratio_str(series(0, ""), series(2, "")).c_str());
  std::printf("* not part of a training step (mnist_cnn's first layer needs no dx)\n");
}

// The bulk casts against oneDNN's reorder for n = 64*28*28*32 (verified equal
// first: normal random values, so the reorder's denormal flushing is moot).
void bench_casts(int rounds, int reps) {
  const int64_t n = 64 * 28 * 28 * 32;
  const Input x = random_input(static_cast<size_t>(n), 99);
  std::vector<float> xf(x.f);
  for (size_t i = 0; i < xf.size(); ++i) xf[i] *= 1.0f + 0x1p-10f;  // not bf16-exact, so rounding happens
  std::vector<uint16_t> a(static_cast<size_t>(n)), b(static_cast<size_t>(n));
  std::vector<float> fa(static_cast<size_t>(n)), fb(static_cast<size_t>(n));
  using dnnl::memory;
  const memory::desc f32_d({n}, memory::data_type::f32, memory::format_tag::a);
  const memory::desc bf16_d({n}, memory::data_type::bf16, memory::format_tag::a);
  const dnnl::reorder::primitive_desc to_pd(dtrain::onednn::cpu_engine(), f32_d, dtrain::onednn::cpu_engine(), bf16_d);
  const dnnl::reorder::primitive_desc from_pd(dtrain::onednn::cpu_engine(), bf16_d, dtrain::onednn::cpu_engine(), f32_d);
  const dnnl::reorder to_bf16(to_pd), to_f32(from_pd);
  auto reorder = [](const dnnl::reorder& r, const memory::desc& s, const void* src, const memory::desc& d, void* dst) {
    dtrain::onednn::execute(r, memory::desc(), {{DNNL_ARG_FROM, dtrain::onednn::wrap(s, src)},
                                                {DNNL_ARG_TO, dtrain::onednn::wrap(d, dst)}});
  };
  cast_f32_to_bf16(xf.data(), a.data(), n);
  reorder(to_bf16, f32_d, xf.data(), bf16_d, b.data());
  cast_bf16_to_f32(a.data(), fa.data(), n);
  reorder(to_f32, bf16_d, a.data(), f32_d, fb.data());
  if (a != b || fa != fb) {
    std::printf("cast verification failed: cast.cpp and oneDNN's reorder disagree\n");
    std::exit(1);
  }
  std::vector<double> t[4];
  for (int r = 0; r < rounds; ++r) {
    t[0].push_back(median_us([&] { cast_f32_to_bf16(xf.data(), a.data(), n); }, reps));
    t[1].push_back(median_us([&] { reorder(to_bf16, f32_d, xf.data(), bf16_d, b.data()); }, reps));
    t[2].push_back(median_us([&] { cast_bf16_to_f32(a.data(), fa.data(), n); }, reps));
    t[3].push_back(median_us([&] { reorder(to_f32, bf16_d, a.data(), f32_d, fb.data()); }, reps));
  }
  std::printf("\ncasts, n = 64*28*28*32 (verified equal to oneDNN's reorder [%s]); median us over rounds\n",
              to_pd.impl_info_str());
  std::printf("  f32 -> bf16: cast.cpp %.0f, reorder %.0f; reorder / cast.cpp %s\n", median(t[0]), median(t[1]),
              ratio_str(t[1], t[0]).c_str());
  std::printf("  bf16 -> f32: cast.cpp %.0f, reorder %.0f; reorder / cast.cpp %s\n", median(t[2]), median(t[3]),
              ratio_str(t[3], t[2]).c_str());
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"mnist_cnn's CPU kernels: f32 against bf16 (verified, then timed in alternation)"};
  std::vector<int64_t> batches{64, 256};
  int rounds = 5, reps = 15;
  app.add_option("--batch", batches, "batch sizes (repeatable)")->capture_default_str();
  app.add_option("--rounds", rounds, "rounds; each runs every plan once, in a rotating order")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  app.add_option("--reps", reps, "timed repetitions per call and round (median taken)")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  CLI11_PARSE(app, argc, argv);
  const char* threads = std::getenv("OMP_NUM_THREADS");
  std::printf("dtrain_bench_kernels_bf16: OMP_NUM_THREADS=%s; ratios are f32 time / bf16 time, "
              "median [min, max] over rounds\n",
              threads ? threads : "(unset)");
  try {
    bench_casts(rounds, reps);
    for (int64_t b : batches) bench_batch(b, rounds, reps);
  } catch (const dtrain::ErrorException& e) {
    std::fprintf(stderr, "error: %s\n", e.error.message.c_str());
    return 1;
  }
  return 0;
}
