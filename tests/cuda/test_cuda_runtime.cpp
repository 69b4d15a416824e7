// The CUDA runtime pieces on a real GPU: the per-GPU context (one compute and
// one copy stream, created once), the caching allocator over cudaMalloc
// (steady state, usable memory, out-of-memory text), and an input copy on
// the copy stream through pinned memory, ordered before compute by an event.
// Skipped, saying why, without a GPU.
#include <doctest.h>

#include <string>
#include <vector>

#include "engine/cuda/eltwise.hpp"
#include "tests/cuda/gpu_test_util.hpp"

namespace dtrain::cuda {
namespace {

void require_ok(const Status& s) { REQUIRE_MESSAGE(s.ok(), (s.ok() ? "" : s.error().message)); }

TEST_CASE("cuda device context: one compute and one copy stream per GPU, created once") {
  DTRAIN_SKIP_WITHOUT_GPU();
  Result<GpuDevice*> a = gpu_device(0);
  Result<GpuDevice*> b = gpu_device(0);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK(*a == *b);
  CHECK((*a)->index == 0);
  CHECK((*a)->compute.get() != nullptr);
  CHECK((*a)->copy.get() != nullptr);
  CHECK((*a)->compute.get() != (*a)->copy.get());
  CHECK((*a)->compute.device() == 0);
  CHECK((*a)->allocator.name() == "gpu:0");
}

TEST_CASE("cuda allocator on a GPU: a repeated pattern makes no cudaMalloc once warm, and the memory works") {
  DTRAIN_SKIP_WITHOUT_GPU();
  // A private allocator, so other tests' blocks do not change the counts.
  CachingAllocator alloc(cuda_segment_backend(0));
  const Stream& stream = gputest::gpu0().compute;
  const StreamId sid = stream_id(stream);
  auto step = [&] {
    std::vector<void*> got;
    for (size_t bytes : {size_t{4096}, size_t{3} << 20, size_t{100}, size_t{12} << 20, size_t{700000}}) {
      Result<void*> p = alloc.allocate(bytes, sid);
      REQUIRE_MESSAGE(p.ok(), (p.ok() ? "" : p.error().message));
      got.push_back(*p);
    }
    // Write through the first block and read it back: the memory is real.
    const std::vector<float> ones(1024, 1.0f);
    require_ok(copy_async(got[0], ones.data(), 4096, stream));
    require_ok(scale(3.0f, static_cast<float*>(got[0]), static_cast<float*>(got[0]), 1024, stream.get()));
    std::vector<float> back(1024, 0.0f);
    require_ok(copy_async(back.data(), got[0], 4096, stream));
    require_ok(stream.synchronize());
    CHECK(back == std::vector<float>(1024, 3.0f));
    for (void* p : got) alloc.free(p);
    return got;
  };
  step();
  const AllocatorStats warm = alloc.stats();
  const std::vector<void*> second = step();
  for (int i = 0; i < 20; ++i) CHECK(step() == second);
  const AllocatorStats s = alloc.stats();
  CHECK(s.backend_allocations == warm.backend_allocations);
  CHECK(s.backend_frees == 0);
  CHECK(s.reserved_bytes == warm.reserved_bytes);
  CHECK(s.allocated_bytes == 0);
  CHECK(alloc.empty_cache() == warm.reserved_bytes);
  CHECK(alloc.stats().reserved_bytes == 0);
}

TEST_CASE("cuda allocator on a GPU: an impossible request fails with the cudaMalloc error inside") {
  DTRAIN_SKIP_WITHOUT_GPU();
  CachingAllocator alloc(cuda_segment_backend(0));
  const size_t huge = size_t{1} << 46;  // 64 TiB
  Result<void*> p = alloc.allocate(huge, 0);
  REQUIRE_FALSE(p.ok());
  const std::string& m = p.error().message;
  CHECK(m.starts_with("gpu:0: out of memory: cannot allocate 70368744177664 bytes (a 70368744177664-byte segment) "
                      "with 0 bytes in use and 0 bytes reserved by dtrain's caching allocator: "
                      "engine/cuda/device_context.cpp:"));
  CHECK(m.find(": cudaMalloc(&p, bytes) failed on gpu:0 (host ") != std::string::npos);
  CHECK(m.ends_with("): cudaErrorMemoryAllocation (2): out of memory"));
  CHECK(alloc.stats().backend_failures == 1);
  // The error was cleared: the next launch is not blamed for it.
  gputest::DeviceArray a(std::vector<float>{1.0f, -1.0f});
  require_ok(relu_forward(a.data(), a.data(), 2, gputest::gpu0().compute.get()));
  CHECK(a.download() == std::vector<float>{1.0f, 0.0f});
}

TEST_CASE("cuda streams: an input copy on the copy stream through pinned memory, ordered before compute by an event") {
  DTRAIN_SKIP_WITHOUT_GPU();
  GpuDevice& gpu = gputest::gpu0();
  const int64_t n = 1 << 20;
  Result<PinnedBuffer> in = PinnedBuffer::allocate(n * sizeof(float));
  Result<PinnedBuffer> out = PinnedBuffer::allocate(n * sizeof(float));
  REQUIRE(in.ok());
  REQUIRE(out.ok());
  CHECK(in->bytes() == n * sizeof(float));
  for (int64_t i = 0; i < n; ++i) in->floats()[i] = static_cast<float>(i % 1000) - 500.0f;
  // The block belongs to the compute stream, which uses it after the copy.
  gputest::DeviceArray batch(n);
  Result<Event> copied = Event::create(0);
  REQUIRE(copied.ok());
  require_ok(copy_async(batch.data(), in->data(), in->bytes(), gpu.copy));
  require_ok(copied->record(gpu.copy));
  require_ok(copied->make_wait(gpu.compute));
  require_ok(relu_forward(batch.data(), batch.data(), n, gpu.compute.get()));
  require_ok(copy_async(out->data(), batch.data(), out->bytes(), gpu.compute));
  require_ok(gpu.compute.synchronize());
  Result<bool> done = copied->finished();
  REQUIRE(done.ok());
  CHECK(*done);
  int64_t wrong = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float v = static_cast<float>(i % 1000) - 500.0f;
    wrong += out->floats()[i] != (v > 0.0f ? v : 0.0f);
  }
  CHECK(wrong == 0);
}

}  // namespace
}  // namespace dtrain::cuda
