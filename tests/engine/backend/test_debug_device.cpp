// The debug device: NaN-filled guarded memory that faults on any host access
// outside its own kernels, explicit transfers, and their counts.
#include <doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <csignal>
#include <cstdio>
#include <functional>

#include "engine/backend/debug/debug_memory.hpp"
#include "engine/ops/core.hpp"
#include "engine/tensor.hpp"

namespace dtrain {
namespace {

const Device kDebug0{DeviceKind::debug, 0};
const Device kDebug1{DeviceKind::debug, 1};

// Runs fn in a forked child with stderr silenced; true when the child died
// (a signal, or a sanitizer's report exit) instead of returning normally.
bool dies(const std::function<void()>& fn) {
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    // The test runner's crash handlers would report the expected fault as a
    // failure of its own: the child dies by the default action instead.
    for (int sig : {SIGSEGV, SIGBUS, SIGABRT, SIGILL, SIGFPE}) std::signal(sig, SIG_DFL);
    if (std::freopen("/dev/null", "w", stderr) == nullptr || std::freopen("/dev/null", "w", stdout) == nullptr) _exit(3);
    fn();
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

TEST_CASE("debug device: new memory is NaN, zeros() and fill() are what they say, to_host reads it back") {
  const Tensor fresh = Tensor::empty({5, 3}, DType::f32, kDebug0);
  for (float v : fresh.to_vector()) CHECK(std::isnan(v));
  Tensor z = Tensor::zeros({7}, DType::f32, kDebug0);
  for (float v : z.to_vector()) CHECK(v == 0.0f);
  z.fill(2.5f);
  for (float v : z.to_vector()) CHECK(v == 2.5f);
  const Tensor host = Tensor::from({4}, {1, 2, 3, 4});
  const Tensor dev = host.to(kDebug1);
  CHECK(dev.device() == kDebug1);
  CHECK(!dev.shares_storage(host));
  CHECK(dev.to_vector() == std::vector<float>{1, 2, 3, 4});
  CHECK(dev.clone().to_vector() == std::vector<float>{1, 2, 3, 4});
}

TEST_CASE("debug device: host reads and writes outside a kernel fault; inside one they work") {
  Tensor t = Tensor::from({16}, std::vector<float>(16, 1.0f)).to(kDebug0);
  CHECK(dies([&] { (void)*static_cast<volatile float*>(t.raw()); }));
  CHECK(dies([&] { *static_cast<volatile float*>(t.raw()) = 3.0f; }));
  // Asking a debug tensor for a host pointer is refused outright.
  CHECK(dies([&] { (void)t.data(); }));
  CHECK(dies([&] { (void)t[0]; }));
  // Another debug device's kernel does not open this device's memory.
  CHECK(dies([&] {
    DebugAccess other{kDebug1};
    (void)*static_cast<volatile float*>(t.raw());
  }));
  // Past the end of the allocation is a guard page, even inside a kernel.
  CHECK(dies([&] {
    DebugAccess open{kDebug0};
    (void)*(static_cast<volatile char*>(t.raw()) + 4096 + 64);
  }));
  {
    DebugAccess open{kDebug0};
    CHECK(*static_cast<float*>(t.raw()) == 1.0f);
  }
  // The control: the same read of a host tensor is fine.
  const Tensor h = Tensor::from({1}, {4.0f});
  CHECK(!dies([&] { (void)*static_cast<const volatile float*>(h.raw()); }));
}

TEST_CASE("debug device: host<->device copies are counted, host<->host copies are not") {
  const CopyCounts before = copy_counts();
  const Tensor host = Tensor::from({3}, {1, 2, 3});
  Tensor dev = host.to(kDebug0);  // 1 host -> device
  (void)dev.to_host();            // 1 device -> host
  Tensor other = Tensor::empty({3}, DType::f32, kDebug1);
  other.copy_from(dev);           // 1 device -> device
  Tensor host2(Shape{3});
  host2.copy_from(host);          // not counted
  (void)ops::sum_squares(ops::Context{kDebug0}, dev);  // a scalar read back: 1 device -> host
  const CopyCounts after = copy_counts();
  CHECK(after.host_to_device - before.host_to_device == 1);
  CHECK(after.device_to_host - before.device_to_host == 2);
  CHECK(after.device_to_device - before.device_to_device == 1);
}

TEST_CASE("debug device: allocations are released with their last tensor") {
  const int64_t before = debug_live_allocations(3);
  {
    const Tensor a = Tensor::empty({100}, DType::f32, Device{DeviceKind::debug, 3});
    const Tensor view = a.rows(10, 20);
    CHECK(debug_live_allocations(3) == before + 1);
  }
  CHECK(debug_live_allocations(3) == before);
}

TEST_CASE("ops: a tensor on the wrong device is refused, never used") {
  Tensor a = Tensor::from({2}, {1, 2});
  const Tensor b = Tensor::from({2}, {3, 4}).to(kDebug0);
  CHECK(dies([&] { ops::mul(ops::Context{kHost}, a, b, a); }));
  CHECK(dies([&] { ops::scale(ops::Context{kDebug1}, a, 2.0f); }));
}

}  // namespace
}  // namespace dtrain
