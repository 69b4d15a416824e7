// GlooComm between threads of this process (each rank with its own
// coordination client, one service): ring all-reduce of float and double
// against sums computed here in double, broadcast, barrier, and the kCluster
// errors when a peer never arrives, dies mid-run or hangs.
#include <doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "strategies/gloo_comm.hpp"
#include "strategies/tree_sum.hpp"
#include "tests/strategies/coord_test_util.hpp"

using namespace dtrain;
using namespace dtrain::testing;
using namespace std::chrono_literals;

namespace {

// Collectives that should succeed get 3 s (ample on a loaded 2-core machine
// under ASan); the failure cases below use 1-2 s.
constexpr double kTimeout = 3;

struct Ranks {
  std::unique_ptr<CoordinationService> service;
  ConnectedTasks tasks;
};

Ranks connect_ranks(int n) {
  CoordinationOptions o = worker_options(n, kTimeout);
  Ranks r;
  auto s = CoordinationService::start("127.0.0.1:0", o);
  REQUIRE_MESSAGE(s.ok(), s.error().message);
  r.service = std::move(*s);
  r.tasks = connect_tasks(local(r.service->port()), o.training_tasks, o);
  for (int i = 0; i < n; ++i) REQUIRE(r.tasks.clients[static_cast<size_t>(i)] != nullptr);
  return r;
}

// Runs body(rank, comm) on one thread per rank, each with a GlooComm made from
// its own client; create errors are reported as failed checks.
void run_ranks(Ranks& r, int n, const std::function<void(int, GlooComm&)>& body) {
  std::vector<std::thread> threads;
  std::vector<std::string> errors(static_cast<size_t>(n));
  for (int rank = 0; rank < n; ++rank) {
    threads.emplace_back([&, rank] {
      auto comm = GlooComm::create(*r.tasks.clients[static_cast<size_t>(rank)], rank, n, "127.0.0.1", kTimeout, "t");
      if (!comm.ok()) {
        errors[static_cast<size_t>(rank)] = comm.error().message;
        return;
      }
      body(rank, **comm);
    });
  }
  for (auto& t : threads) t.join();
  for (const std::string& e : errors) CHECK_MESSAGE(e.empty(), e);
}

// Rank r's input element i: irrational-looking values, so the float sum rounds.
template <class T>
T input(int rank, size_t i) {
  return static_cast<T>(std::sin(0.37 * static_cast<double>(i) + rank) * (rank + 1.5));
}

template <class T>
void check_all_reduce(int n, size_t count, double rel_tol) {
  Ranks r = connect_ranks(n);
  std::vector<std::vector<T>> out(static_cast<size_t>(n));
  std::vector<Status> status(static_cast<size_t>(n));
  run_ranks(r, n, [&](int rank, GlooComm& comm) {
    CHECK(comm.rank() == rank);
    CHECK(comm.size() == n);
    std::vector<T> data(count);
    for (size_t i = 0; i < count; ++i) data[i] = input<T>(rank, i);
    status[static_cast<size_t>(rank)] = comm.all_reduce_sum(data.data(), count);
    out[static_cast<size_t>(rank)] = std::move(data);
  });
  for (const Status& s : status) REQUIRE_MESSAGE(s.ok(), s.error().message);
  size_t bad = 0;
  for (size_t i = 0; i < count; ++i) {
    double want = 0, scale = 0;
    for (int rank = 0; rank < n; ++rank) {
      want += static_cast<double>(input<T>(rank, i));
      scale += std::abs(static_cast<double>(input<T>(rank, i)));
    }
    if (std::abs(static_cast<double>(out[0][i]) - want) > rel_tol * scale + 1e-300) ++bad;
  }
  CHECK(bad == 0);
  for (int rank = 1; rank < n; ++rank) {  // the same bits everywhere
    CHECK(std::memcmp(out[0].data(), out[static_cast<size_t>(rank)].data(), count * sizeof(T)) == 0);
  }
}

// Elements 0..count of value(rank, i) summed over n ranks in tree_sum's grouping.
template <class Value>
std::vector<float> tree_sum_of(int n, size_t count, Value value) {
  std::vector<std::vector<float>> parts(static_cast<size_t>(n), std::vector<float>(count));
  for (int rank = 0; rank < n; ++rank) {
    for (size_t i = 0; i < count; ++i) parts[static_cast<size_t>(rank)][i] = value(rank, i);
  }
  tree_sum(static_cast<size_t>(n), [&](size_t into, size_t from) {
    for (size_t i = 0; i < count; ++i) parts[into][i] += parts[from][i];
  });
  return parts[0];
}

}  // namespace

TEST_CASE("gloo: all_reduce_sum over 2 and 3 ranks, float and double") {
  for (int n : {2, 3}) {
    for (size_t count : {size_t{1}, size_t{1000}, size_t{1} << 20}) {
      CAPTURE(n);
      CAPTURE(count);
      check_all_reduce<float>(n, count, 1e-6);
      check_all_reduce<double>(n, count, 1e-14);
    }
  }
}

// Small all-reduces (buffer x ranks up to 256 KiB) are an all-gather and a
// sum in tree_sum's grouping on every rank: those bits exactly, the same on
// every rank, for 2 to 4 ranks, up to the largest gathered count; one float
// more takes the ring (checked against the exact sum within 1e-6).
TEST_CASE("gloo: small all_reduce_sum adds the ranks in tree_sum's grouping; larger ones take the ring") {
  for (int n : {2, 3, 4}) {
    const size_t largest = 256 * 1024 / (sizeof(float) * static_cast<size_t>(n));
    for (size_t count : {size_t{5}, largest}) {
      CAPTURE(n);
      CAPTURE(count);
      Ranks r = connect_ranks(n);
      std::vector<std::vector<float>> out(static_cast<size_t>(n));
      run_ranks(r, n, [&](int rank, GlooComm& comm) {
        std::vector<float> data(count);
        for (size_t i = 0; i < count; ++i) data[i] = input<float>(rank, i);
        const Status s = comm.all_reduce_sum(data.data(), count);
        CHECK_MESSAGE(s.ok(), s.error().message);
        out[static_cast<size_t>(rank)] = std::move(data);
      });
      const std::vector<float> want = tree_sum_of(n, count, input<float>);
      for (int rank = 0; rank < n; ++rank) {
        REQUIRE(out[static_cast<size_t>(rank)].size() == count);
        CHECK(std::memcmp(out[static_cast<size_t>(rank)].data(), want.data(), count * sizeof(float)) == 0);
      }
    }
    check_all_reduce<float>(n, largest + 1, 1e-6);
  }
}

// run.micro_batch_rows' all-reduce: every element is the ranks' values added
// in tree_sum's grouping (for 4 ranks (a0 + a1) + (a2 + a3), for 5
// ((a0 + a1) + (a2 + a3)) + a4), bit for bit, on every rank, whatever the
// count (chunks padded to a multiple of the ranks); the ring's grouping
// rotates with the chunk, so for 3 or more ranks its bits differ.
TEST_CASE("gloo: all_reduce_sum_ordered adds the ranks in tree_sum's grouping, the same bits on every rank") {
  const auto value = [](int rank, size_t i) { return input<float>(rank, i) * (i % 3 == 0 ? 1e4f : 1.0f); };
  for (int n : {1, 2, 3, 4, 5}) {
    for (size_t count : {size_t{1}, size_t{7}, size_t{1000}, size_t{100003}}) {
      CAPTURE(n);
      CAPTURE(count);
      Ranks r = connect_ranks(n);
      std::vector<std::vector<float>> out(static_cast<size_t>(n));
      run_ranks(r, n, [&](int rank, GlooComm& comm) {
        std::vector<float> data(count);
        for (size_t i = 0; i < count; ++i) data[i] = value(rank, i);
        const Status s = comm.all_reduce_sum_ordered(data.data(), count);
        CHECK_MESSAGE(s.ok(), s.error().message);
        out[static_cast<size_t>(rank)] = std::move(data);
      });
      const std::vector<float> want = tree_sum_of(n, count, value);
      for (int rank = 0; rank < n; ++rank) {
        REQUIRE(out[static_cast<size_t>(rank)].size() == count);
        CHECK(std::memcmp(out[static_cast<size_t>(rank)].data(), want.data(), count * sizeof(float)) == 0);
      }
      if (n == 4 && count == 100003) {  // the grouping matters here: left to right gives other bits
        size_t differ = 0;
        for (size_t i = 0; i < count; ++i) {
          differ += ((value(0, i) + value(1, i)) + value(2, i)) + value(3, i) != out[0][i];
        }
        CHECK(differ > 0);
      }
    }
  }
}

TEST_CASE("tree_sum: the grouping of 1..9 parts") {
  const auto grouping = [](size_t n) {
    std::vector<std::string> parts;
    for (size_t i = 0; i < n; ++i) parts.push_back(std::to_string(i));
    tree_sum(n, [&](size_t into, size_t from) { parts[into] = "(" + parts[into] + "+" + parts[from] + ")"; });
    return parts[0];
  };
  CHECK(grouping(1) == "0");
  CHECK(grouping(2) == "(0+1)");
  CHECK(grouping(3) == "((0+1)+2)");
  CHECK(grouping(4) == "((0+1)+(2+3))");
  CHECK(grouping(5) == "(((0+1)+(2+3))+4)");
  CHECK(grouping(6) == "(((0+1)+(2+3))+(4+5))");
  CHECK(grouping(7) == "(((0+1)+(2+3))+((4+5)+6))");
  CHECK(grouping(9) == "((((0+1)+(2+3))+((4+5)+(6+7)))+8)");
}

TEST_CASE("tree_parts: n ranges that are nodes of the tree over m parts, the largest split first") {
  CHECK(tree_parts(4, 1) == std::vector<size_t>{0, 4});
  CHECK(tree_parts(4, 2) == std::vector<size_t>{0, 2, 4});
  CHECK(tree_parts(4, 3) == std::vector<size_t>{0, 1, 2, 4});
  CHECK(tree_parts(4, 4) == std::vector<size_t>{0, 1, 2, 3, 4});
  CHECK(tree_parts(3, 2) == std::vector<size_t>{0, 2, 3});
  CHECK(tree_parts(6, 3) == std::vector<size_t>{0, 2, 4, 6});
  CHECK(tree_parts(8, 3) == std::vector<size_t>{0, 2, 4, 8});
  CHECK(tree_parts(16, 4) == std::vector<size_t>{0, 4, 8, 12, 16});
  // Every range is a node: summing each, then the ranges in the tree's
  // order, groups the parts exactly as the tree over all of them does.
  const auto whole = [](size_t m) {
    std::vector<std::string> parts;
    for (size_t i = 0; i < m; ++i) parts.push_back(std::to_string(i));
    tree_sum(m, [&](size_t into, size_t from) { parts[into] = "(" + parts[into] + "+" + parts[from] + ")"; });
    return parts[0];
  };
  for (size_t m = 1; m <= 12; ++m) {
    for (size_t n = 1; n <= m; ++n) {
      CAPTURE(m);
      CAPTURE(n);
      const std::vector<size_t> b = tree_parts(m, n);
      REQUIRE(b.size() == n + 1);
      std::vector<std::string> ranges;
      for (size_t r = 0; r < n; ++r) {
        REQUIRE(b[r + 1] > b[r]);
        std::vector<std::string> parts;
        for (size_t i = b[r]; i < b[r + 1]; ++i) parts.push_back(std::to_string(i));
        tree_sum(parts.size(), [&](size_t into, size_t from) { parts[into] = "(" + parts[into] + "+" + parts[from] + ")"; });
        ranges.push_back(parts[0]);
      }
      // Combined as nodes of the tree over [0, m).
      std::function<std::string(size_t, size_t)> node = [&](size_t lo, size_t hi) -> std::string {
        for (size_t r = 0; r < n; ++r) {
          if (b[r] == lo && b[r + 1] == hi) return ranges[r];
        }
        const size_t mid = lo + tree_split(hi - lo);
        return "(" + node(lo, mid) + "+" + node(mid, hi) + ")";
      };
      CHECK(node(0, m) == whole(m));
    }
  }
}

TEST_CASE("gloo: all_reduce_sum_ordered with ranks holding tree_parts' ranges gives the bits of the tree over every part") {
  // 4 parts over 3 ranks (ranges [0,1) [1,2) [2,4)): rank 2 holds the sum
  // of parts 2 and 3; the result must be (p0 + p1) + (p2 + p3), not the
  // 3-rank tree (r0 + r1) + r2.
  const size_t count = 100003;
  const auto part = [](int p, size_t i) { return input<float>(p, i) * (i % 3 == 0 ? 1e4f : 1.0f); };
  const std::vector<size_t> bounds = tree_parts(4, 3);
  Ranks r = connect_ranks(3);
  std::vector<std::vector<float>> out(3);
  run_ranks(r, 3, [&](int rank, GlooComm& comm) {
    std::vector<float> data(count);
    for (size_t i = 0; i < count; ++i) {
      data[i] = rank < 2 ? part(rank, i) : part(2, i) + part(3, i);
    }
    comm.set_ordered_parts(bounds);
    const Status s = comm.all_reduce_sum_ordered(data.data(), count);
    CHECK_MESSAGE(s.ok(), s.error().message);
    out[static_cast<size_t>(rank)] = std::move(data);
  });
  const std::vector<float> want = tree_sum_of(4, count, part);
  size_t three_rank_tree_differs = 0;
  for (int rank = 0; rank < 3; ++rank) {
    REQUIRE(out[static_cast<size_t>(rank)].size() == count);
    CHECK(std::memcmp(out[static_cast<size_t>(rank)].data(), want.data(), count * sizeof(float)) == 0);
  }
  for (size_t i = 0; i < count; ++i) {
    three_rank_tree_differs += (part(0, i) + part(1, i)) + (part(2, i) + part(3, i)) != ((part(0, i) + part(1, i)) + part(2, i)) + part(3, i);
  }
  CHECK(three_rank_tree_differs > 0);  // the grouping matters for these values
}

// The collective strategy all-reduces gradients in buckets whose boundaries
// depend on strategy.bucket_mb and the model: with 2 ranks each element's sum
// is one addition (a + b == b + a exactly), so any cut into buckets gives the
// bits of one all-reduce of the whole buffer.
TEST_CASE("gloo: over 2 ranks, bucketed all-reduces give the bits of one all-reduce of the whole buffer") {
  const int n = 2;
  const size_t count = 421642;  // mnist_cnn's gradients
  const std::vector<size_t> cuts = {0, 1290, 1290 + 401536, count};  // its two buckets, then a third piece
  Ranks r = connect_ranks(n);
  std::vector<std::vector<float>> whole(n), bucketed(n);
  run_ranks(r, n, [&](int rank, GlooComm& comm) {
    std::vector<float> a(count);
    for (size_t i = 0; i < count; ++i) a[i] = input<float>(rank, i);
    std::vector<float> b = a;
    CHECK(comm.all_reduce_sum(a.data(), count).ok());
    for (size_t k = 0; k + 1 < cuts.size(); ++k) {
      const auto first = b.begin() + static_cast<ptrdiff_t>(cuts[k]);
      std::vector<float> piece(first, b.begin() + static_cast<ptrdiff_t>(cuts[k + 1]));
      CHECK(comm.all_reduce_sum(piece.data(), piece.size()).ok());
      std::copy(piece.begin(), piece.end(), first);
    }
    whole[static_cast<size_t>(rank)] = std::move(a);
    bucketed[static_cast<size_t>(rank)] = std::move(b);
  });
  for (int rank = 0; rank < n; ++rank) {
    REQUIRE(whole[static_cast<size_t>(rank)].size() == count);
    CHECK(std::memcmp(whole[static_cast<size_t>(rank)].data(), bucketed[static_cast<size_t>(rank)].data(),
                      count * sizeof(float)) == 0);
  }
}

TEST_CASE("gloo: broadcast and barrier") {
  const int n = 3;
  Ranks r = connect_ranks(n);
  std::vector<std::vector<uint8_t>> got(n);
  std::vector<double> barrier_done(n);
  auto t0 = Clock::now();
  run_ranks(r, n, [&](int rank, GlooComm& comm) {
    for (int root : {1, 0}) {
      std::vector<uint8_t> buf(4099);
      for (size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<uint8_t>(rank == root ? (i * 7 + 3) % 251 : 0);
      CHECK(comm.broadcast(buf.data(), buf.size(), root).ok());
      if (root == 1) got[static_cast<size_t>(rank)] = buf;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(150 * rank));
    CHECK(comm.barrier().ok());
    barrier_done[static_cast<size_t>(rank)] = secs_since(t0);
  });
  for (int rank = 0; rank < n; ++rank) {
    REQUIRE(got[static_cast<size_t>(rank)].size() == 4099);
    size_t bad = 0;
    for (size_t i = 0; i < 4099; ++i) bad += got[static_cast<size_t>(rank)][i] != (i * 7 + 3) % 251;
    CHECK(bad == 0);
    // Nobody leaves the barrier before the last rank (300 ms late) entered it.
    CHECK(barrier_done[static_cast<size_t>(rank)] >= 0.29);
  }
}

TEST_CASE("gloo: a rank that never arrives fails create within the timeout") {
  Ranks r = connect_ranks(2);
  auto t0 = Clock::now();
  auto comm = GlooComm::create(*r.tasks.clients[0], 0, 2, "127.0.0.1", 2.0, "lonely");
  double took = secs_since(t0);
  REQUIRE_FALSE(comm.ok());
  CHECK(comm.error().kind == ErrorKind::kCluster);
  CHECK(comm.error().message ==
        "gloo: connecting rank 0 of 2: coordination store: key \"lonely/1\" was not set within 2 s");
  CHECK(took >= 1.9);
  CHECK(took < 3.5);
}

TEST_CASE("gloo: a peer that dies mid-run gives a cluster error, not a hang") {
  const int n = 2;
  Ranks r = connect_ranks(n);
  Status second;
  double took = 0;
  std::vector<std::thread> threads;
  for (int rank = 0; rank < n; ++rank) {
    threads.emplace_back([&, rank] {
      auto comm = GlooComm::create(*r.tasks.clients[static_cast<size_t>(rank)], rank, n, "127.0.0.1", kTimeout, "d");
      CHECK(comm.ok());
      if (!comm.ok()) return;  // (REQUIRE would throw on this thread)
      std::vector<float> data(1000, 1.0f);
      CHECK((*comm)->all_reduce_sum(data.data(), data.size()).ok());
      CHECK(data[999] == 2.0f);
      if (rank == 1) {  // dies: its sockets close, its client stops without leave()
        comm->reset();
        r.tasks.clients[1].reset();
        return;
      }
      std::this_thread::sleep_for(100ms);
      auto t0 = Clock::now();
      second = (*comm)->all_reduce_sum(data.data(), data.size());
      took = secs_since(t0);
      Status third = (*comm)->barrier();  // broken: fails at once with the same error
      CHECK_FALSE(third.ok());
      if (!third.ok() && !second.ok()) CHECK(third.error().message == second.error().message);
    });
  }
  for (auto& t : threads) t.join();
  REQUIRE_FALSE(second.ok());
  CHECK(second.error().kind == ErrorKind::kCluster);
  CHECK_MESSAGE(second.error().message.rfind("gloo all_reduce_sum (rank 0 of 2): ", 0) == 0, second.error().message);
  CHECK(took < kTimeout + 0.5);  // at once, at worst the timeout: never a hang
}

TEST_CASE("gloo: a peer that hangs makes the collective fail after the timeout") {
  const int n = 2;
  Ranks r = connect_ranks(n);
  Status got;
  double took = 0;
  std::vector<std::thread> threads;
  for (int rank = 0; rank < n; ++rank) {
    threads.emplace_back([&, rank] {
      auto comm = GlooComm::create(*r.tasks.clients[static_cast<size_t>(rank)], rank, n, "127.0.0.1", 1.0, "h");
      CHECK(comm.ok());
      if (!comm.ok()) return;
      if (rank == 1) {  // alive but never joins the collective
        std::this_thread::sleep_for(2s);
        return;
      }
      std::vector<double> data(100, 1.0);
      auto t0 = Clock::now();
      got = (*comm)->all_reduce_sum(data.data(), data.size());
      took = secs_since(t0);
    });
  }
  for (auto& t : threads) t.join();
  REQUIRE_FALSE(got.ok());
  CHECK(got.error().kind == ErrorKind::kCluster);
  CHECK_MESSAGE(got.error().message.rfind("gloo all_reduce_sum (rank 0 of 2): ", 0) == 0, got.error().message);
  CHECK(took >= 0.9);
  CHECK(took < 1.8);  // the timeout, not the peer's exit at 2 s
}
