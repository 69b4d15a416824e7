// The parameter service's failures and plumbing over real gRPC on loopback:
// steps that are never reached, a ps that is gone or never existed (kCluster
// errors naming it, within the timeout), shutdown, byte counters, and many
// clients on many threads at once. Timeouts are 1-2 s.
#include <atomic>
#include <thread>

#include "tests/strategies/ps_test_util.hpp"

using namespace dtrain;
using namespace dtrain::testing;
using namespace std::chrono_literals;

namespace {

// A port nobody listens on (bound once by a service, then released).
int free_port() { return start_ps(ps_config("sgd", true, 1))->port(); }

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("ps: a pull or snapshot of a step that is never reached fails within the timeout") {
  auto service = start_ps(ps_config("sgd", true, 2));
  auto client = connect_ps(service->port(), 1);
  REQUIRE(client->init(test_shards(), test_state(3)).ok());
  auto t0 = PsClock::now();
  auto r = client->pull(9);
  double took = ps_secs_since(t0);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().kind == ErrorKind::kCluster);
  CHECK_MESSAGE(r.error().message == ps_label(service->port()) +
                                         ": pull of global step 9 failed: the ps did not reach it within 1 s (it is "
                                         "at step 3)",
                r.error().message);
  CHECK(took >= 0.9);
  CHECK(took < 2.0);
  auto snap = client->snapshot(4);
  REQUIRE_FALSE(snap.ok());
  CHECK(contains(snap.error().message, "snapshot of global step 4"));
}

TEST_CASE("ps: the ps's own timeout bounds a pull too") {
  PsConfig c = ps_config("sgd", true, 1);
  c.timeout_secs = 1;
  auto service = start_ps(c);
  auto client = connect_ps(service->port(), 5);
  REQUIRE(client->init(test_shards(), test_state(0)).ok());
  auto t0 = PsClock::now();
  auto r = client->pull(1);
  REQUIRE_FALSE(r.ok());
  CHECK(contains(r.error().message, "within 1 s"));
  CHECK(ps_secs_since(t0) < 2.0);
}

TEST_CASE("ps: calls to a ps that is gone fail within the timeout naming it") {
  auto service = start_ps(ps_config("sgd", true, 1));
  int port = service->port();
  auto client = connect_ps(port, 1);
  REQUIRE(client->init(test_shards(), test_state(0)).ok());
  service.reset();
  auto t0 = PsClock::now();
  auto pulled = client->pull(0);
  REQUIRE_FALSE(pulled.ok());
  CHECK(pulled.error().kind == ErrorKind::kCluster);
  CHECK_MESSAGE(contains(pulled.error().message, ps_label(port) + " did not answer within 1 s"),
                pulled.error().message);
  CHECK(ps_secs_since(t0) < 2.5);
  t0 = PsClock::now();
  Status pushed = client->push(0, 0, 0.1f, test_grads(0, 0));
  REQUIRE_FALSE(pushed.ok());
  CHECK(pushed.error().kind == ErrorKind::kCluster);
  CHECK(contains(pushed.error().message, ps_local(port)));
  CHECK(ps_secs_since(t0) < 2.5);
}

TEST_CASE("ps: connecting to an address where no ps listens fails within the timeout") {
  int port = free_port();
  auto t0 = PsClock::now();
  auto r = PsClient::connect(ps_local(port), "ps 0", 1);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().kind == ErrorKind::kCluster);
  CHECK(r.error().message == "could not connect to ps 0 (" + ps_local(port) + ") within 1 s");
  CHECK(ps_secs_since(t0) >= 0.9);
  CHECK(ps_secs_since(t0) < 2.5);
  // A ps that is started but never initialized: calls wait for init, then fail.
  auto service = start_ps(ps_config("sgd", true, 1));
  auto client = connect_ps(service->port(), 1);
  auto pushed = client->push(0, 0, 0.1f, test_grads(0, 0));
  REQUIRE_FALSE(pushed.ok());
  CHECK_MESSAGE(contains(pushed.error().message, "was not initialized within 1 s"), pushed.error().message);
  // A second service on the same port fails to start.
  auto second = ParameterService::start(ps_local(service->port()), ps_config("sgd", true, 1));
  REQUIRE_FALSE(second.ok());
  CHECK(second.error().kind == ErrorKind::kCluster);
  CHECK(contains(second.error().message, ps_local(service->port())));
}

TEST_CASE("ps: shutdown ends wait_for_shutdown; byte counters count tensor payloads") {
  auto service = start_ps(ps_config("adam", true, 1));
  auto client = connect_ps(service->port());
  CHECK_FALSE(service->wait_for_shutdown(PsClock::now() + 100ms));
  REQUIRE(client->init(test_shards(), test_state(0)).ok());
  const int64_t values_bytes = (6 + 2 + 2) * 4;
  CHECK(client->bytes_sent() == values_bytes);
  CHECK(client->bytes_received() == 0);
  REQUIRE(client->pull(0).ok());
  CHECK(client->bytes_received() == values_bytes);
  REQUIRE(client->push(0, 0, 0.1f, test_grads(0, 0)).ok());
  CHECK(client->bytes_sent() == values_bytes + (6 + 2) * 4);
  REQUIRE(client->snapshot(1).ok());
  CHECK(client->bytes_received() == 2 * values_bytes + 2 * (6 + 2) * 4);  // adam: two slots per trainable shard
  REQUIRE(client->shutdown().ok());
  CHECK(service->wait_for_shutdown(PsClock::now() + 2s));
}

TEST_CASE("ps: three worker threads and a checkpointing chief run 20 sync steps together") {
  const int n = 3;
  const int64_t steps = 20;
  const float lr = 0.01f;
  auto service = start_ps(ps_config("sgd", true, n, 0.5));
  auto chief = connect_ps(service->port());
  REQUIRE(chief->init(test_shards(), test_state(0)).ok());
  std::atomic<int> failures{0};
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (int w = 0; w < n; ++w) {
    threads.emplace_back([&, w] {
      auto client = PsClient::connect(ps_local(service->port()), "ps 0", 2);
      if (!client.ok()) {
        ++failures;
        return;
      }
      for (int64_t s = 0; s < steps; ++s) {
        auto pulled = (*client)->pull(s);
        if (!pulled.ok() || pulled->step != s) {
          ++failures;
          return;
        }
        // The gradient depends on the values pulled: a wrong step shows in the result.
        std::vector<Tensor> g{pulled->values[0].clone(), pulled->values[1].clone(), Tensor()};
        for (size_t i = 0; i < 2; ++i) {
          for (int64_t j = 0; j < g[i].numel(); ++j) g[i][j] *= 0.1f * static_cast<float>(w + 1);
        }
        if (!(*client)->push(w, s, lr, g).ok()) ++failures;
      }
    });
  }
  std::thread checkpointer([&] {
    while (!stop.load()) {
      auto snap = chief->snapshot(0);
      if (!snap.ok() || snap->slots.size() != 3) ++failures;
      std::this_thread::sleep_for(2ms);
    }
  });
  for (auto& t : threads) t.join();
  stop = true;
  checkpointer.join();
  REQUIRE(failures.load() == 0);
  auto final_state = chief->snapshot(steps);
  REQUIRE(final_state.ok());
  CHECK(final_state->step == steps);
  // Reference: every worker sees the same values, so the summed gradient is
  // 0.1 * (1 + 2 + 3) * values.
  RefSgd ref{lr, 0.5};
  for (size_t i = 0; i < 2; ++i) {
    std::vector<double> w = to_double(test_state(0).values[i]);
    std::vector<double> v(w.size(), 0.0);
    for (int64_t s = 0; s < steps; ++s) {
      std::vector<double> g(w.size());
      for (size_t j = 0; j < w.size(); ++j) g[j] = 0.6 * w[j];
      ref.apply(w, v, g);
    }
    check_close(final_state->values[i], w, fmt::format("values[{}]", i));
  }
}

TEST_CASE("ps: shards larger than gRPC's default 4 MB message limit travel both ways") {
  auto service = start_ps(ps_config("sgd", true, 1));
  auto client = connect_ps(service->port());
  const int64_t rows = 1 << 19;  // [524288, 4]: 8 MB
  Tensor big({rows, 4});
  for (int64_t i = 0; i < big.numel(); ++i) big[i] = static_cast<float>(i % 1000) * 0.001f;
  PsState state;
  state.values = {big};
  REQUIRE(client->init({PsShard{"embedding", 0, rows, {rows, 4}, true}}, state).ok());
  Tensor grad({rows, 4}, 1.0f);
  REQUIRE(client->push(0, 0, 0.5f, {grad}).ok());
  auto pulled = client->pull(1);
  REQUIRE_MESSAGE(pulled.ok(), pulled.error().message);
  const Tensor& got = pulled->values[0];
  REQUIRE(got.numel() == big.numel());
  bool all = true;
  for (int64_t i = 0; i < got.numel(); ++i) all = all && got[i] == big[i] - 0.5f;
  CHECK(all);
  CHECK(client->bytes_received() == static_cast<int64_t>(big.bytes()));
}
