// Helpers for the GPU tests (gpu_test_util.hpp).
#include "tests/cuda/gpu_test_util.hpp"

#include <cstring>

namespace dtrain::cuda::gputest {

GpuDevice& gpu0() {
  Result<GpuDevice*> d = gpu_device(0);
  REQUIRE_MESSAGE(d.ok(), (d.ok() ? "" : d.error().message));
  return **d;
}

DeviceArray::DeviceArray(int64_t n) : n_(n) {
  Result<CachedBuffer> b = gpu0().allocator.allocate_buffer(static_cast<size_t>(n) * sizeof(float),
                                                            stream_id(gpu0().compute));
  REQUIRE_MESSAGE(b.ok(), (b.ok() ? "" : b.error().message));
  buf_ = std::move(*b);
}

DeviceArray::DeviceArray(const std::vector<float>& host) : DeviceArray(static_cast<int64_t>(host.size())) {
  const Status s = copy_async(data(), host.data(), host.size() * sizeof(float), gpu0().compute);
  REQUIRE_MESSAGE(s.ok(), (s.ok() ? "" : s.error().message));
  sync_compute();
}

std::vector<float> DeviceArray::download() const {
  std::vector<float> out(static_cast<size_t>(n_));
  const Status s = copy_async(out.data(), data(), out.size() * sizeof(float), gpu0().compute);
  REQUIRE_MESSAGE(s.ok(), (s.ok() ? "" : s.error().message));
  sync_compute();
  return out;
}

void sync_compute() {
  const Status s = gpu0().compute.synchronize();
  REQUIRE_MESSAGE(s.ok(), (s.ok() ? "" : s.error().message));
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace dtrain::cuda::gputest
