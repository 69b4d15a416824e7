// The caching allocator's policy over a host-memory backend that counts its
// calls: rounding, pools, splitting and merging, per-stream reuse, exact
// stats, no backend calls once a repeated pattern is warm, empty_cache, and
// out-of-memory handling. Runs on every machine (no CUDA needed).
#include <doctest.h>

#include <cstdlib>
#include <map>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "engine/cuda/caching_allocator.hpp"

namespace dtrain::cuda {
namespace {

constexpr size_t KiB = 1024, MiB = 1024 * 1024;

// What the host backend did, owned by the test (the allocator owns the backend).
struct BackendLog {
  uint64_t allocs = 0, releases = 0, failures = 0;
  uint64_t bad_releases = 0;  // release() of an unknown segment or with the wrong size
  std::map<void*, size_t> live;  // segment -> size
  size_t live_bytes() const {
    size_t n = 0;
    for (const auto& [p, b] : live) n += b;
    return n;
  }
};

class HostBackend final : public SegmentBackend {
 public:
  HostBackend(BackendLog* log, size_t limit) : log_(log), limit_(limit) {}
  Result<void*> allocate(size_t bytes) override {
    if (log_->live_bytes() + bytes > limit_) {
      ++log_->failures;
      return runtime_error("host backend: " + std::to_string(bytes) + " bytes over the limit");
    }
    void* p = std::aligned_alloc(kBlockAlignment, bytes);
    if (p == nullptr) return runtime_error("host backend: aligned_alloc failed");
    ++log_->allocs;
    log_->live[p] = bytes;
    return p;
  }
  void release(void* segment, size_t bytes) override {
    // No doctest assertions here: this may run on the test's worker threads.
    const auto it = log_->live.find(segment);
    if (it == log_->live.end() || it->second != bytes) {
      ++log_->bad_releases;
      return;
    }
    log_->live.erase(it);
    ++log_->releases;
    std::free(segment);
  }
  std::string name() const override { return "host:test"; }

 private:
  BackendLog* log_;
  size_t limit_;
};

struct Fixture {
  explicit Fixture(size_t limit = SIZE_MAX) : alloc(std::make_unique<HostBackend>(&log, limit)) {}
  void* get(size_t bytes, StreamId s) {
    Result<void*> p = alloc.allocate(bytes, s);
    REQUIRE_MESSAGE(p.ok(), (p.ok() ? "" : p.error().message));
    return *p;
  }
  BackendLog log;  // declared first: outlives the allocator, whose destructor releases segments
  CachingAllocator alloc;
};

char* at(void* p, size_t offset) { return static_cast<char*>(p) + offset; }

TEST_CASE("cuda allocator: sizes round up to 512 bytes and segments follow the pool policy") {
  CHECK(CachingAllocator::round_size(1) == 512);
  CHECK(CachingAllocator::round_size(512) == 512);
  CHECK(CachingAllocator::round_size(513) == 1024);
  CHECK(CachingAllocator::round_size(MiB + 1) == MiB + 512);
  CHECK(CachingAllocator::segment_size(512) == 2 * MiB);           // small pool
  CHECK(CachingAllocator::segment_size(MiB) == 2 * MiB);
  CHECK(CachingAllocator::segment_size(MiB + 512) == 20 * MiB);    // large, below 10 MiB
  CHECK(CachingAllocator::segment_size(10 * MiB - 512) == 20 * MiB);
  CHECK(CachingAllocator::segment_size(10 * MiB) == 10 * MiB);     // rounded to 2 MiB
  CHECK(CachingAllocator::segment_size(11 * MiB) == 12 * MiB);
}

TEST_CASE("cuda allocator: stats count rounded and requested bytes, segments, peaks exactly") {
  Fixture f;
  void* a = f.get(1000, 1);
  AllocatorStats s = f.alloc.stats();
  CHECK(s.allocated_bytes == 1024);
  CHECK(s.requested_bytes == 1000);
  CHECK(s.reserved_bytes == 2 * MiB);
  CHECK(s.segments == 1);
  CHECK(s.backend_allocations == 1);
  CHECK(s.active_blocks == 1);
  CHECK(s.cached_blocks == 1);  // the rest of the 2 MiB segment
  CHECK(f.alloc.block_size(a) == 1024);

  void* b = f.get(3 * MiB, 1);
  s = f.alloc.stats();
  CHECK(s.allocated_bytes == 1024 + 3 * MiB);
  CHECK(s.requested_bytes == 1000 + 3 * MiB);
  CHECK(s.reserved_bytes == 22 * MiB);
  CHECK(s.peak_allocated_bytes == 1024 + 3 * MiB);
  CHECK(s.peak_reserved_bytes == 22 * MiB);
  CHECK(s.backend_allocations == 2);
  CHECK(s.cached_blocks == 2);  // the 17 MiB rest of the large segment too

  f.alloc.free(a);
  s = f.alloc.stats();
  CHECK(s.allocated_bytes == 3 * MiB);
  CHECK(s.requested_bytes == 3 * MiB);
  CHECK(s.reserved_bytes == 22 * MiB);
  CHECK(s.peak_allocated_bytes == 1024 + 3 * MiB);
  CHECK(s.allocations == 2);
  CHECK(s.frees == 1);
  CHECK(s.active_blocks == 1);
  CHECK(s.cached_blocks == 2);  // a merged back into its whole segment

  f.alloc.reset_peaks();
  s = f.alloc.stats();
  CHECK(s.peak_allocated_bytes == 3 * MiB);
  CHECK(s.peak_reserved_bytes == 22 * MiB);
  f.alloc.free(b);
  CHECK(f.alloc.stats().allocated_bytes == 0);
  CHECK(f.alloc.stats().requested_bytes == 0);
  CHECK(f.log.allocs == 2);
  CHECK(f.log.releases == 0);
}

TEST_CASE("cuda allocator: blocks are carved from the front of a segment and free neighbours merge") {
  Fixture f;
  void* a = f.get(KiB, 7);
  void* b = f.get(2 * KiB, 7);
  void* c = f.get(4 * KiB, 7);
  CHECK(b == at(a, KiB));
  CHECK(c == at(a, 3 * KiB));
  CHECK(f.alloc.stats().cached_blocks == 1);

  f.alloc.free(b);  // a hole between a and c
  CHECK(f.alloc.stats().cached_blocks == 2);
  void* b2 = f.get(2 * KiB, 7);  // best fit: the 2 KiB hole, not the big rest
  CHECK(b2 == b);
  void* d = f.get(KiB + 512, 7);  // does not fit any hole: from the rest, after c
  CHECK(d == at(a, 7 * KiB));

  f.alloc.free(a);
  f.alloc.free(b2);  // merges with a's hole into 3 KiB at a
  CHECK(f.alloc.stats().cached_blocks == 2);
  void* e = f.get(3 * KiB, 7);
  CHECK(e == a);
  CHECK(f.alloc.block_size(e) == 3 * KiB);  // exactly the merged block, not split
  f.alloc.free(e);
  f.alloc.free(d);
  f.alloc.free(c);  // everything merges back into one 2 MiB block
  CHECK(f.alloc.stats().cached_blocks == 1);
  CHECK(f.alloc.empty_cache() == 2 * MiB);
  CHECK(f.log.live.empty());
  CHECK(f.log.bad_releases == 0);
}

TEST_CASE("cuda allocator: large blocks split only when more than 1 MiB would remain") {
  Fixture f;
  void* a = f.get(MiB + 1, 0);  // large pool: 20 MiB segment, split
  CHECK(f.alloc.block_size(a) == MiB + 512);
  CHECK(f.alloc.stats().cached_blocks == 1);
  void* b = f.get(18 * MiB, 0);  // 19 MiB - 512 remain: 1 MiB - 512 left over, not split
  CHECK(b == at(a, MiB + 512));
  CHECK(f.alloc.block_size(b) == 19 * MiB - 512);
  CHECK(f.alloc.stats().cached_blocks == 0);
  CHECK(f.alloc.stats().allocated_bytes == 20 * MiB);
  CHECK(f.alloc.stats().requested_bytes == MiB + 1 + 18 * MiB);
  CHECK(f.log.allocs == 1);
  void* c = f.get(19 * MiB + 512, 0);  // >= 10 MiB: its own segment rounded to 2 MiB, 20 MiB, not split
  CHECK(f.alloc.block_size(c) == 20 * MiB);
  CHECK(f.alloc.stats().reserved_bytes == 40 * MiB);
  // Small requests never come from the large pool.
  f.alloc.free(b);
  void* small = f.get(KiB, 0);
  CHECK(f.alloc.stats().reserved_bytes == 42 * MiB);
  CHECK(small != b);
  for (void* p : {a, c, small}) f.alloc.free(p);
}

TEST_CASE("cuda allocator: a freed block is reused by its own stream only") {
  Fixture f;
  // Both orders of stream ids: the free sets are sorted by stream first.
  for (const auto& streams : {std::pair<StreamId, StreamId>{1, 2}, std::pair<StreamId, StreamId>{4, 3}}) {
    const StreamId mine = streams.first, other = streams.second;
    CAPTURE(mine);
    const uint64_t before = f.log.allocs;
    void* p1 = f.get(4 * KiB, mine);
    f.alloc.free(p1);
    void* p2 = f.get(4 * KiB, other);  // may not take the other stream's cached block
    CHECK(f.log.allocs == before + 2);
    CHECK(p2 != p1);
    void* p1b = f.get(4 * KiB, mine);  // the first stream gets it back, with no backend call
    CHECK(p1b == p1);
    CHECK(f.log.allocs == before + 2);
    f.alloc.free(p2);
    f.alloc.free(p1b);
    // Large pool too.
    void* q1 = f.get(5 * MiB, mine);
    f.alloc.free(q1);
    void* q2 = f.get(5 * MiB, other);
    CHECK(q2 != q1);
    CHECK(f.log.allocs == before + 4);
    f.alloc.free(q2);
  }
}

// A training step's pattern: activations of several sizes, some freed mid-step,
// gradients, an input batch on the copy stream; all freed at the end.
std::vector<void*> one_step(Fixture& f, StreamId compute, StreamId copy) {
  std::vector<void*> seen;
  auto get = [&](size_t bytes, StreamId s) {
    void* p = f.get(bytes, s);
    seen.push_back(p);
    return p;
  };
  void* batch = get(3 * MiB + 100, copy);
  void* act1 = get(256 * KiB, compute);
  void* act2 = get(12 * MiB, compute);
  void* tmp = get(700, compute);
  void* act3 = get(5 * MiB, compute);
  f.alloc.free(tmp);
  void* g1 = get(256 * KiB, compute);
  void* g2 = get(12 * MiB, compute);
  f.alloc.free(act3);
  void* g3 = get(40 * KiB, compute);
  void* ws = get(7 * MiB + 3, compute);
  for (void* p : {ws, g3, g2, g1, act2, act1, batch}) f.alloc.free(p);
  return seen;
}

TEST_CASE("cuda allocator: a repeated allocation pattern makes no backend calls once warm") {
  Fixture f;
  void* weights = f.get(30 * MiB, 1);  // lives across steps
  const std::vector<void*> first = one_step(f, 1, 2);
  const AllocatorStats warm = f.alloc.stats();
  const std::vector<void*> second = one_step(f, 1, 2);
  for (int step = 0; step < 50; ++step) {
    CHECK(one_step(f, 1, 2) == second);  // the same blocks, step after step
  }
  const AllocatorStats s = f.alloc.stats();
  CHECK(s.backend_allocations == warm.backend_allocations);
  CHECK(s.backend_frees == 0);
  CHECK(s.reserved_bytes == warm.reserved_bytes);
  CHECK(s.peak_reserved_bytes == warm.reserved_bytes);
  CHECK(s.allocated_bytes == 30 * MiB);
  CHECK(s.allocations == 1 + 52 * first.size());
  CHECK(f.log.allocs == warm.backend_allocations);
  f.alloc.free(weights);
}

TEST_CASE("cuda allocator: empty_cache returns unused segments and keeps those in use") {
  Fixture f;
  {
    // A free block at the front of a segment whose later block is in use stays.
    void* x = f.get(KiB, 9);
    void* y = f.get(KiB, 9);
    f.alloc.free(x);
    CHECK(f.alloc.empty_cache() == 0);
    CHECK(f.log.releases == 0);
    f.alloc.free(y);
    CHECK(f.alloc.empty_cache() == 2 * MiB);
  }
  void* a = f.get(KiB, 1);        // small segment 1
  void* b = f.get(3 * MiB, 1);    // large segment (20 MiB)
  void* c = f.get(KiB, 2);        // small segment 2 (another stream)
  f.alloc.free(b);
  f.alloc.free(c);
  CHECK(f.alloc.empty_cache() == 22 * MiB);  // segment 1 still has a in use
  AllocatorStats s = f.alloc.stats();
  CHECK(s.reserved_bytes == 2 * MiB);
  CHECK(s.segments == 1);
  CHECK(s.backend_frees == 3);
  CHECK(f.log.live.size() == 1);
  CHECK(f.log.live.begin()->first == a);
  CHECK(f.alloc.empty_cache() == 0);
  f.alloc.free(a);
  CHECK(f.alloc.empty_cache() == 2 * MiB);
  s = f.alloc.stats();
  CHECK(s.reserved_bytes == 0);
  CHECK(s.segments == 0);
  CHECK(s.cached_blocks == 0);
  CHECK(s.peak_reserved_bytes == 24 * MiB);
  CHECK(f.log.live.empty());
  CHECK(f.log.releases == 4);
  CHECK(f.log.bad_releases == 0);
}

TEST_CASE("cuda allocator: out of memory empties the cache and retries, then fails saying why") {
  Fixture f(20 * MiB);
  f.alloc.free(f.get(KiB, 1));     // a cached 2 MiB segment
  void* big = f.get(3 * MiB, 2);   // 2 + 20 MiB > 20: fails, releases the cached segment, retries
  AllocatorStats s = f.alloc.stats();
  CHECK(f.log.failures == 1);
  CHECK(s.backend_failures == 1);
  CHECK(s.backend_frees == 1);
  CHECK(s.reserved_bytes == 20 * MiB);
  CHECK(s.allocated_bytes == 3 * MiB);

  // Nothing left to release (the cached rest belongs to a segment in use).
  Result<void*> r = f.alloc.allocate(3 * MiB, 3);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().kind == ErrorKind::kRuntime);
  CHECK(r.error().message ==
        "host:test: out of memory: cannot allocate 3145728 bytes (a 20971520-byte segment) with 3145728 bytes in "
        "use and 20971520 bytes reserved by dtrain's caching allocator: host backend: 20971520 bytes over the limit");
  s = f.alloc.stats();
  CHECK(s.backend_failures == 2);
  CHECK(f.log.failures == 2);
  CHECK(s.allocations == 2);
  CHECK(s.reserved_bytes == 20 * MiB);
  f.alloc.free(big);
}

TEST_CASE("cuda allocator: zero bytes give nullptr and free(nullptr) does nothing") {
  Fixture f;
  CHECK(f.get(0, 1) == nullptr);
  f.alloc.free(nullptr);
  const AllocatorStats s = f.alloc.stats();
  CHECK(s.allocations == 0);
  CHECK(s.frees == 0);
  CHECK(s.reserved_bytes == 0);
  CHECK(f.log.allocs == 0);
}

TEST_CASE("cuda allocator: CachedBuffer frees its block when destroyed or replaced") {
  Fixture f;
  {
    Result<CachedBuffer> a = f.alloc.allocate_buffer(1000, 1);
    REQUIRE(a.ok());
    CHECK(a->bytes() == 1000);
    CHECK(f.alloc.stats().active_blocks == 1);
    CachedBuffer moved = std::move(*a);
    CHECK(a->get() == nullptr);
    CHECK(f.alloc.stats().active_blocks == 1);
    Result<CachedBuffer> b = f.alloc.allocate_buffer(2000, 1);
    REQUIRE(b.ok());
    CHECK(f.alloc.stats().active_blocks == 2);
    moved = std::move(*b);  // frees the first block
    CHECK(f.alloc.stats().active_blocks == 1);
    CHECK(f.alloc.stats().requested_bytes == 2000);
  }
  CHECK(f.alloc.stats().active_blocks == 0);
  CHECK(f.alloc.stats().allocated_bytes == 0);
}

TEST_CASE("cuda allocator: concurrent allocations and frees from several threads keep the books") {
  Fixture f;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&f, t] {
      for (int i = 0; i < 500; ++i) {
        Result<void*> p = f.alloc.allocate(static_cast<size_t>(512 * (1 + (i * 7 + t) % 50)), static_cast<StreamId>(t % 2));
        if (p.ok()) f.alloc.free(*p);
      }
    });
  }
  for (auto& th : threads) th.join();
  const AllocatorStats s = f.alloc.stats();
  CHECK(s.allocations == 2000);
  CHECK(s.frees == 2000);
  CHECK(s.active_blocks == 0);
  CHECK(s.allocated_bytes == 0);
  CHECK(s.cached_blocks == s.segments);  // everything merged back into whole segments
  CHECK(f.alloc.empty_cache() == s.reserved_bytes);
}

}  // namespace
}  // namespace dtrain::cuda
