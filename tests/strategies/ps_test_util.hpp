// Helpers for the parameter-service tests: a service on a loopback port,
// clients, a small set of shards and the reference optimizers (sgd with
// momentum, adam) computed independently in double.
#pragma once

#include <doctest.h>
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "strategies/ps_service.hpp"

namespace dtrain::testing {

using PsClock = std::chrono::steady_clock;

inline double ps_secs_since(PsClock::time_point t) {
  return std::chrono::duration<double>(PsClock::now() - t).count();
}

inline std::string ps_local(int port) { return fmt::format("127.0.0.1:{}", port); }
inline std::string ps_label(int port) { return fmt::format("ps 1 ({})", ps_local(port)); }

inline std::unique_ptr<ParameterService> start_ps(const PsConfig& c) {
  auto s = ParameterService::start("127.0.0.1:0", c);
  REQUIRE_MESSAGE(s.ok(), s.error().message);
  return std::move(*s);
}

inline std::unique_ptr<PsClient> connect_ps(int port, double timeout_secs = 2) {
  auto c = PsClient::connect(ps_local(port), ps_label(port), timeout_secs);
  REQUIRE_MESSAGE(c.ok(), c.error().message);
  return std::move(*c);
}

inline PsConfig ps_config(const std::string& optimizer, bool sync, int workers, double momentum = 0) {
  PsConfig c;
  c.optimizer.type = optimizer;
  c.optimizer.momentum = momentum;
  c.sync = sync;
  c.num_workers = workers;
  c.timeout_secs = 2;
  return c;
}

// Two trainable shards ("w" [3, 2], "b" [2]) and one non-trainable ("mean" [2]).
inline std::vector<PsShard> test_shards() {
  return {PsShard{"dense/kernel", 0, 3, {3, 2}, true}, PsShard{"dense/bias", 0, 2, {2}, true},
          PsShard{"bn/moving_mean", 0, 2, {2}, false}};
}

inline PsState test_state(int64_t step) {
  PsState s;
  s.step = step;
  s.values = {Tensor::from({3, 2}, {0.5f, -1.25f, 2.0f, 0.75f, -0.3f, 1.1f}), Tensor::from({2}, {0.1f, -0.2f}),
              Tensor::from({2}, {3.0f, 4.0f})};
  return s;
}

// Worker w's gradient of trainable shard i at step s; an empty Tensor for the
// non-trainable shard. Elements 0 and 1 of the kernel make the float sum
// depend on the order of addition (1e-8 + 1 - 1).
inline std::vector<Tensor> test_grads(int w, int64_t s) {
  std::vector<Tensor> g{Tensor({3, 2}), Tensor({2}), Tensor()};
  for (int64_t j = 0; j < 6; ++j) g[0][j] = 0.1f * static_cast<float>(w + 1) - 0.03f * static_cast<float>(j + s);
  const float tricky[3] = {3e-8f, 1.0f, -1.0f};
  g[0][0] = tricky[w % 3];
  g[0][1] = tricky[(w + 1) % 3] * 0.5f;
  for (int64_t j = 0; j < 2; ++j) {
    g[1][j] = 0.2f * static_cast<float>(j + 1) * (w % 2 == 0 ? 1.f : -0.5f) + 0.01f * static_cast<float>(s);
  }
  return g;
}

// Double-precision references over flat vectors.
struct RefSgd {
  double lr, momentum;
  void apply(std::vector<double>& w, std::vector<double>& v, const std::vector<double>& g) const {
    for (size_t i = 0; i < w.size(); ++i) {
      v[i] = momentum * v[i] - lr * g[i];
      w[i] += v[i];
    }
  }
};

struct RefAdam {
  double lr, b1 = 0.9, b2 = 0.999, eps = 1e-7;
  void apply(int64_t t, std::vector<double>& w, std::vector<double>& m, std::vector<double>& v,
             const std::vector<double>& g) const {
    double lr_t = lr * std::sqrt(1 - std::pow(b2, static_cast<double>(t))) / (1 - std::pow(b1, static_cast<double>(t)));
    for (size_t i = 0; i < w.size(); ++i) {
      m[i] = b1 * m[i] + (1 - b1) * g[i];
      v[i] = b2 * v[i] + (1 - b2) * g[i] * g[i];
      w[i] -= lr_t * m[i] / (std::sqrt(v[i]) + eps);
    }
  }
};

inline std::vector<double> to_double(const Tensor& t) {
  std::vector<double> out(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) out[static_cast<size_t>(i)] = t[i];
  return out;
}

// |got - want| <= 1e-6 * max(|want|, 0.1) for every element.
inline void check_close(const Tensor& got, const std::vector<double>& want, const std::string& what) {
  REQUIRE(static_cast<size_t>(got.numel()) == want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    double tol = 1e-6 * std::max(std::abs(want[i]), 0.1);
    CHECK_MESSAGE(std::abs(got[static_cast<int64_t>(i)] - want[i]) <= tol,
                  fmt::format("{}[{}]: {} vs reference {}", what, i, got[static_cast<int64_t>(i)], want[i]));
  }
}

inline bool bit_identical(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && std::memcmp(a.data(), b.data(), a.bytes()) == 0;
}

}  // namespace dtrain::testing
