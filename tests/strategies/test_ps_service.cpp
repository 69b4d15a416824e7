// The parameter service over real gRPC on loopback: init and pulls that wait
// for it, synchronous updates (one gradient per worker, summed in worker
// order, checked against double-precision sgd-with-momentum and adam),
// blocking pulls, rejected pushes, asynchronous updates, non-trainable
// shards and snapshots.
#include <atomic>
#include <thread>

#include "tests/strategies/ps_test_util.hpp"

using namespace dtrain;
using namespace dtrain::testing;
using namespace std::chrono_literals;

namespace {

// `steps` synchronous steps: every worker (its own client and thread) pulls
// step s and pushes test_grads(w, s); the pushes arrive in worker order, or
// in reverse order when `reverse`. Returns the snapshot after the last step.
PsState run_sync(const PsConfig& c, int64_t steps, bool reverse, float lr) {
  auto service = start_ps(c);
  auto chief = connect_ps(service->port());
  REQUIRE(chief->init(test_shards(), test_state(0)).ok());
  const int n = c.num_workers;
  std::vector<std::unique_ptr<PsClient>> workers;
  for (int w = 0; w < n; ++w) workers.push_back(connect_ps(service->port()));
  for (int64_t s = 0; s < steps; ++s) {
    std::atomic<int> turn{0};
    std::atomic<int> failures{0};
    std::vector<std::thread> threads;
    for (int w = 0; w < n; ++w) {
      threads.emplace_back([&, w] {
        auto pulled = workers[static_cast<size_t>(w)]->pull(s);
        if (!pulled.ok() || pulled->step != s) ++failures;
        int position = reverse ? n - 1 - w : w;
        while (turn.load() != position) std::this_thread::sleep_for(1ms);
        if (!workers[static_cast<size_t>(w)]->push(w, s, lr, test_grads(w, s)).ok()) ++failures;
        ++turn;
      });
    }
    for (auto& t : threads) t.join();
    REQUIRE(failures.load() == 0);
  }
  auto snap = chief->snapshot(steps);
  REQUIRE_MESSAGE(snap.ok(), snap.error().message);
  return std::move(*snap);
}

// The sum over workers of gradient shard i at step s, in double.
std::vector<double> grad_sum(int n, int64_t s, size_t i) {
  std::vector<double> sum;
  for (int w = 0; w < n; ++w) {
    std::vector<double> g = to_double(test_grads(w, s)[i]);
    if (sum.empty()) sum.assign(g.size(), 0.0);
    for (size_t j = 0; j < g.size(); ++j) sum[j] += g[j];
  }
  return sum;
}

}  // namespace

TEST_CASE("ps: a pull from another client waits for init, then returns the values and step") {
  auto service = start_ps(ps_config("sgd", true, 1));
  auto chief = connect_ps(service->port());
  auto worker = connect_ps(service->port());
  Result<PsState> pulled = cluster_error("not pulled");
  auto t0 = PsClock::now();
  std::thread puller([&] { pulled = worker->pull(0); });
  std::this_thread::sleep_for(300ms);
  REQUIRE(chief->init(test_shards(), test_state(7)).ok());
  puller.join();
  REQUIRE_MESSAGE(pulled.ok(), pulled.error().message);
  CHECK(ps_secs_since(t0) >= 0.25);
  CHECK(pulled->step == 7);
  CHECK(pulled->slots.empty());
  PsState want = test_state(7);
  REQUIRE(pulled->values.size() == 3);
  for (size_t i = 0; i < 3; ++i) CHECK(bit_identical(pulled->values[i], want.values[i]));
  // A second init replaces everything (a restart).
  PsState again = test_state(3);
  again.values[1] = Tensor::from({2}, {9.0f, 8.0f});
  REQUIRE(chief->init(test_shards(), again).ok());
  auto second = worker->pull(0);
  REQUIRE(second.ok());
  CHECK(second->step == 3);
  CHECK(second->values[1].to_vector() == std::vector<float>{9.0f, 8.0f});
}

TEST_CASE("ps: sync sgd with momentum sums one gradient per worker in a fixed order") {
  for (int n : {2, 3, 4}) {
    CAPTURE(n);
    const float lr = 0.05f;
    const int64_t steps = 3;
    PsConfig c = ps_config("sgd", true, n, 0.9);
    PsState in_order = run_sync(c, steps, false, lr);
    PsState reversed = run_sync(c, steps, true, lr);
    CHECK(in_order.step == steps);
    CHECK(reversed.step == steps);
    for (size_t i = 0; i < 3; ++i) {
      CHECK(bit_identical(in_order.values[i], reversed.values[i]));
      for (size_t k = 0; k < in_order.slots[i].size(); ++k) {
        CHECK(bit_identical(in_order.slots[i][k], reversed.slots[i][k]));
      }
    }
    RefSgd ref{lr, 0.9};
    PsState init = test_state(0);
    for (size_t i = 0; i < 2; ++i) {
      std::vector<double> w = to_double(init.values[i]);
      std::vector<double> v(w.size(), 0.0);
      for (int64_t s = 0; s < steps; ++s) ref.apply(w, v, grad_sum(n, s, i));
      check_close(reversed.values[i], w, fmt::format("values[{}]", i));
      REQUIRE(reversed.slots[i].size() == 1);
      check_close(reversed.slots[i][0], v, fmt::format("momentum[{}]", i));
    }
    // The non-trainable shard is never optimized and has no slots.
    CHECK(bit_identical(reversed.values[2], init.values[2]));
    CHECK(reversed.slots[2].empty());
  }
}

TEST_CASE("ps: sync adam uses the 1-based step for its bias correction") {
  const float lr = 0.01f;
  const int64_t steps = 4;
  PsConfig c = ps_config("adam", true, 2);
  PsState got = run_sync(c, steps, true, lr);
  RefAdam ref{lr};
  PsState init = test_state(0);
  for (size_t i = 0; i < 2; ++i) {
    std::vector<double> w = to_double(init.values[i]);
    std::vector<double> m(w.size(), 0.0), v(w.size(), 0.0);
    for (int64_t s = 0; s < steps; ++s) ref.apply(s + 1, w, m, v, grad_sum(2, s, i));
    check_close(got.values[i], w, fmt::format("values[{}]", i));
    REQUIRE(got.slots[i].size() == 2);
    check_close(got.slots[i][0], m, fmt::format("m[{}]", i));
    check_close(got.slots[i][1], v, fmt::format("v[{}]", i));
  }
}

TEST_CASE("ps: sync pulls block until the step is applied; stale and duplicate pushes are rejected") {
  auto service = start_ps(ps_config("sgd", true, 2));
  auto chief = connect_ps(service->port());
  auto w0 = connect_ps(service->port());
  auto w1 = connect_ps(service->port());
  REQUIRE(chief->init(test_shards(), test_state(0)).ok());
  REQUIRE(w1->push(1, 0, 0.1f, test_grads(1, 0)).ok());

  // Recorded, not applied: a snapshot at step 0 is the initial state.
  auto snap0 = chief->snapshot(0);
  REQUIRE(snap0.ok());
  CHECK(snap0->step == 0);
  CHECK(bit_identical(snap0->values[0], test_state(0).values[0]));

  auto dup = w1->push(1, 0, 0.1f, test_grads(1, 0));
  REQUIRE_FALSE(dup.ok());
  CHECK(dup.error().kind == ErrorKind::kCluster);
  CHECK_MESSAGE(dup.error().message.find("worker 1 pushed a second gradient for global step 0") != std::string::npos,
                dup.error().message);
  CHECK(dup.error().message.find(ps_label(service->port())) != std::string::npos);

  std::atomic<bool> done{false};
  Result<PsState> pulled = cluster_error("not pulled");
  std::thread puller([&] {
    pulled = w1->pull(1);
    done = true;
  });
  std::this_thread::sleep_for(300ms);
  CHECK_FALSE(done.load());  // worker 0's gradient is missing
  REQUIRE(w0->push(0, 0, 0.1f, test_grads(0, 0)).ok());
  puller.join();
  REQUIRE_MESSAGE(pulled.ok(), pulled.error().message);
  CHECK(pulled->step == 1);
  std::vector<double> want = to_double(test_state(0).values[1]);
  std::vector<double> g = grad_sum(2, 0, 1);
  for (size_t j = 0; j < want.size(); ++j) want[j] -= 0.1 * g[j];
  check_close(pulled->values[1], want, "bias after step 0");

  auto stale = w0->push(0, 0, 0.1f, test_grads(0, 0));
  REQUIRE_FALSE(stale.ok());
  CHECK(stale.error().kind == ErrorKind::kCluster);
  CHECK_MESSAGE(stale.error().message.find("worker 0 pushed a gradient for global step 0, which is already applied") !=
                    std::string::npos,
                stale.error().message);

  auto stranger = w0->push(5, 1, 0.1f, test_grads(0, 1));
  REQUIRE_FALSE(stranger.ok());
  CHECK(stranger.error().message.find("worker 5") != std::string::npos);
  std::vector<Tensor> wrong = test_grads(0, 1);
  wrong[1] = Tensor({3});
  auto shape = w0->push(0, 1, 0.1f, wrong);
  REQUIRE_FALSE(shape.ok());
  CHECK_MESSAGE(shape.error().message.find("dense/bias") != std::string::npos, shape.error().message);
}

TEST_CASE("ps: async applies every push on arrival and advances the step by one") {
  auto service = start_ps(ps_config("sgd", false, 2));
  auto chief = connect_ps(service->port());
  auto w0 = connect_ps(service->port());
  auto w1 = connect_ps(service->port());
  REQUIRE(chief->init(test_shards(), test_state(10)).ok());
  std::vector<double> want = to_double(test_state(0).values[0]);
  const float lr = 0.5f;
  int64_t step = 10;
  for (int round = 0; round < 3; ++round) {
    for (int w : {1, 0}) {
      PsClient& client = w == 0 ? *w0 : *w1;
      REQUIRE(client.push(w, 10, lr, test_grads(w, round)).ok());  // `step` is informational
      ++step;
      std::vector<double> g = to_double(test_grads(w, round)[0]);
      for (size_t j = 0; j < want.size(); ++j) want[j] -= 0.5 * g[j];
      auto pulled = client.pull(0);
      REQUIRE(pulled.ok());
      CHECK(pulled->step == step);
      check_close(pulled->values[0], want, "async kernel");
    }
  }
}

TEST_CASE("ps: non-trainable shards are assigned by push_values and skipped by push") {
  auto service = start_ps(ps_config("sgd", true, 1));
  auto chief = connect_ps(service->port());
  REQUIRE(chief->init(test_shards(), test_state(0)).ok());
  SUBCASE("one value per shard, empty for the trainable ones") {
    REQUIRE(chief->push_values({Tensor(), Tensor(), Tensor::from({2}, {-1.0f, 0.25f})}).ok());
  }
  SUBCASE("only the non-trainable shards") {
    REQUIRE(chief->push_values({Tensor::from({2}, {-1.0f, 0.25f})}).ok());
  }
  auto pulled = chief->pull(0);
  REQUIRE(pulled.ok());
  CHECK(pulled->values[2].to_vector() == std::vector<float>{-1.0f, 0.25f});
  CHECK(bit_identical(pulled->values[0], test_state(0).values[0]));
  // A trainable shard cannot be assigned, nor a non-trainable one get a gradient.
  auto assign = chief->push_values({Tensor::from({3, 2}, {1, 2, 3, 4, 5, 6}), Tensor(), Tensor({2})});
  REQUIRE_FALSE(assign.ok());
  CHECK(assign.error().kind == ErrorKind::kCluster);
  std::vector<Tensor> g = test_grads(0, 0);
  g[2] = Tensor({2});
  REQUIRE_FALSE(chief->push(0, 0, 0.1f, g).ok());
  REQUIRE(chief->push(0, 0, 0.1f, test_grads(0, 0)).ok());
  auto after = chief->pull(1);
  REQUIRE(after.ok());
  CHECK(after->values[2].to_vector() == std::vector<float>{-1.0f, 0.25f});
}

TEST_CASE("ps: init with given slots; a snapshot waits for its step and returns values and slots") {
  auto service = start_ps(ps_config("adam", true, 1));
  auto chief = connect_ps(service->port());
  PsState state = test_state(4);
  state.slots = {{Tensor({3, 2}, 0.01f), Tensor({3, 2}, 0.02f)}, {Tensor({2}, 0.03f), Tensor({2}, 0.04f)}, {}};
  REQUIRE(chief->init(test_shards(), state).ok());
  auto snap = chief->snapshot(4);
  REQUIRE(snap.ok());
  CHECK(snap->step == 4);
  REQUIRE(snap->slots.size() == 3);
  CHECK(bit_identical(snap->slots[1][1], state.slots[1][1]));
  Result<PsState> later = cluster_error("no snapshot");
  std::thread taker([&] { later = chief->snapshot(5); });
  std::this_thread::sleep_for(100ms);
  REQUIRE(chief->push(0, 4, 0.01f, test_grads(0, 4)).ok());
  taker.join();
  REQUIRE(later.ok());
  CHECK(later->step == 5);
  RefAdam ref{0.01};
  std::vector<double> w = to_double(state.values[1]);
  std::vector<double> m = to_double(state.slots[1][0]), v = to_double(state.slots[1][1]);
  ref.apply(5, w, m, v, to_double(test_grads(0, 4)[1]));  // the update of step 4 is the 5th
  check_close(later->values[1], w, "bias");
  check_close(later->slots[1][0], m, "m");
  check_close(later->slots[1][1], v, "v");
}

TEST_CASE("ps: init without slots starts them at the optimizer's initial values") {
  PsConfig c = ps_config("adagrad", true, 1);
  c.optimizer.initial_accumulator_value = 0.25;
  auto service = start_ps(c);
  auto chief = connect_ps(service->port());
  REQUIRE(chief->init(test_shards(), test_state(0)).ok());
  auto snap = chief->snapshot(0);
  REQUIRE(snap.ok());
  REQUIRE(snap->slots.size() == 3);
  REQUIRE(snap->slots[0].size() == 1);
  CHECK(snap->slots[0][0].shape() == Shape{3, 2});
  CHECK(snap->slots[0][0].to_vector() == std::vector<float>(6, 0.25f));
  CHECK(snap->slots[2].empty());
}

namespace dtrain::testing {
namespace {

// Mixed precision: a worker whose gradient is not finite says so with its
// push; every ps skips that update and still advances the step, so all ps
// tasks (each hearing every worker) skip the same step.
TEST_CASE("ps: a push flagged skip changes nothing but advances the step, sync and async") {
  for (const bool sync : {true, false}) {
    CAPTURE(sync);
    auto service = start_ps(ps_config("sgd", sync, 2));
    auto chief = connect_ps(service->port());
    auto w0 = connect_ps(service->port());
    auto w1 = connect_ps(service->port());
    REQUIRE(chief->init(test_shards(), test_state(0)).ok());
    // Step 0: worker 1's gradient is not finite; worker 0's is.
    REQUIRE(w0->push(0, 0, 0.5f, test_grads(0, 0)).ok());
    REQUIRE(w1->push(1, 0, 0.5f, test_grads(1, 0), /*skip=*/true).ok());
    auto after = w0->pull(sync ? 1 : 0);
    REQUIRE(after.ok());
    // async applied worker 0's push (a step of its own) and skipped worker 1's.
    CHECK(after->step == (sync ? 1 : 2));
    std::vector<double> want = to_double(test_state(0).values[0]);
    if (!sync) {
      const std::vector<double> g = to_double(test_grads(0, 0)[0]);
      for (size_t j = 0; j < want.size(); ++j) want[j] -= 0.5 * g[j];
    }
    check_close(after->values[0], want, "after the skipped update");
    // The next step applies as usual.
    REQUIRE(w0->push(0, sync ? 1 : 0, 0.5f, test_grads(0, 1)).ok());
    REQUIRE(w1->push(1, sync ? 1 : 0, 0.5f, test_grads(1, 1)).ok());
    auto next = w0->pull(sync ? 2 : 0);
    REQUIRE(next.ok());
    CHECK(next->step == (sync ? 2 : 4));
    const std::vector<double> g0 = to_double(test_grads(0, 1)[0]), g1 = to_double(test_grads(1, 1)[0]);
    for (size_t j = 0; j < want.size(); ++j) want[j] -= 0.5 * g0[j] + 0.5 * g1[j];
    check_close(next->values[0], want, "after the next update");
  }
}

}  // namespace
}  // namespace dtrain::testing

TEST_CASE("ps elastic: a fence takes the new group, refuses the old one's pushes and steps back one update") {
  PsConfig c = ps_config("sgd", true, 3, 0.9);
  c.elastic = true;
  auto ps = start_ps(c);
  auto client = connect_ps(ps->port());
  REQUIRE(client->init(test_shards(), test_state(0)).ok());
  const float lr = 0.05f;
  // Step 0 by the three workers; step 1 by workers 0 and 1 only (worker 2 is lost).
  for (int w = 0; w < 3; ++w) REQUIRE(client->push(w, 0, lr, test_grads(w, 0)).ok());
  auto after0 = client->snapshot(1);
  REQUIRE(after0.ok());
  for (int w = 0; w < 2; ++w) REQUIRE(client->push(w, 1, lr, test_grads(w, 1)).ok());

  // The new group of two: the step in flight is forgotten, the ps stays at step 1.
  std::vector<size_t> bounds = {0, 2, 3};  // worker 0 of the new group covers two of three parts
  auto fenced = client->fence(1, 2, bounds, -1);
  REQUIRE_MESSAGE(fenced.ok(), fenced.error().message);
  CHECK(*fenced == 1);
  // A push of the old group is refused, naming both generations.
  Status old = client->push(1, 1, lr, test_grads(1, 1), false, 0);
  REQUIRE_FALSE(old.ok());
  CHECK(old.error().message.find("generation 0, the ps in generation 1") != std::string::npos);
  // The new group's two pushes make step 1 from their sum alone.
  REQUIRE(client->push(0, 1, lr, test_grads(0, 1), false, 1).ok());
  REQUIRE(client->push(1, 1, lr, test_grads(1, 1), false, 1).ok());
  auto after1 = client->snapshot(2);
  REQUIRE(after1.ok());
  CHECK(after1->step == 2);
  RefSgd ref{lr, 0.9};
  for (size_t i = 0; i < 2; ++i) {
    std::vector<double> w = to_double(after0->values[i]), v = to_double(after0->slots[i][0]);
    std::vector<double> g(w.size(), 0.0);
    for (int k = 0; k < 2; ++k) {
      const Tensor t = test_grads(k, 1)[i];
      for (size_t j = 0; j < g.size(); ++j) g[j] += t[static_cast<int64_t>(j)];
    }
    ref.apply(w, v, g);
    check_close(after1->values[i], w, fmt::format("values[{}]", i));
  }

  // A later group steps back to step 1: the state kept before the last update, bit for bit.
  auto back = client->fence(2, 2, {}, 1);
  REQUIRE_MESSAGE(back.ok(), back.error().message);
  CHECK(*back == 1);
  auto rewound = client->snapshot(1);
  REQUIRE(rewound.ok());
  CHECK(rewound->step == 1);
  for (size_t i = 0; i < 3; ++i) {
    CHECK(bit_identical(rewound->values[i], after0->values[i]));
    for (size_t k = 0; k < after0->slots[i].size(); ++k) {
      CHECK(bit_identical(rewound->slots[i][k], after0->slots[i][k]));
    }
  }
  // Only one update is kept; an older generation's fence is refused.
  auto too_far = client->fence(3, 2, {}, 0);
  REQUIRE_FALSE(too_far.ok());
  CHECK(too_far.error().message.find("the ps is at step 1") != std::string::npos);
  auto stale = client->fence(1, 2, {}, -1);
  REQUIRE_FALSE(stale.ok());
  CHECK(stale.error().message.find("the ps is at generation 3") != std::string::npos);
}

TEST_CASE("ps elastic: a pull that waits for a step gives up once abandon() is true") {
  PsConfig c = ps_config("sgd", true, 2);
  c.elastic = true;
  auto ps = start_ps(c);
  auto client = connect_ps(ps->port(), 30);
  REQUIRE(client->init(test_shards(), test_state(0)).ok());
  std::atomic<bool> changed{false};
  client->set_abandon([&] { return changed.load(); });
  std::thread flip([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    changed = true;
  });
  const auto t0 = PsClock::now();
  auto pulled = client->pull(1);  // step 1 never comes: worker 1 does not push
  flip.join();
  REQUIRE_FALSE(pulled.ok());
  CHECK(pulled.error().message.find("given up: the workers changed") != std::string::npos);
  CHECK(ps_secs_since(t0) < 5.0);  // not the 30 s timeout
}
