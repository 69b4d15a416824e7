// The bf16 path probe and the emulation's per-thread buffers (bf16_path.hpp).
#include "engine/kernels/bf16_path.hpp"

#include <fmt/format.h>
#include <oneapi/dnnl/dnnl.hpp>

#include <atomic>
#include <vector>

#include "engine/cpu_isa.hpp"
#include "engine/kernels/cast.hpp"
#include "engine/kernels/onednn_context.hpp"

namespace dtrain::kernels {
namespace {

// Whether oneDNN creates a bf16 matmul and a bf16 convolution on this CPU.
bool onednn_has_bf16() {
  static const bool has = [] {
    using dnnl::memory;
    constexpr auto kBf16 = memory::data_type::bf16;
    try {
      const memory::desc a({16, 16}, kBf16, memory::format_tag::ab);
      const dnnl::matmul::primitive_desc mm(dnnl::matmul::desc(a, a, a), onednn::cpu_engine());
      const memory::desc x({2, 16, 8, 8}, kBf16, memory::format_tag::nhwc);
      const memory::desc w({16, 16, 3, 3}, kBf16, memory::format_tag::any);
      const dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_training,
                                              dnnl::algorithm::convolution_direct, x, w, x, {1, 1}, {1, 1},
                                              {1, 1});
      const dnnl::convolution_forward::primitive_desc conv(d, onednn::cpu_engine());
      return true;
    } catch (const dnnl::error&) {
      return false;
    }
  }();
  return has;
}

// -1: the probe decides; 0 / 1: forced by the test hook.
std::atomic<int> g_forced{-1};

}  // namespace

bool bf16_emulated() {
  const int forced = g_forced.load(std::memory_order_relaxed);
  return forced >= 0 ? forced == 1 : !onednn_has_bf16();
}

void set_bf16_emulation_for_testing(std::optional<bool> emulate) { g_forced.store(emulate ? *emulate : -1); }

std::string describe_bf16_path() {
  if (!bf16_emulated()) return fmt::format("bfloat16: native (oneDNN {})", onednn_isa_name());
  return fmt::format("bfloat16: emulated on {} (no native bf16 on this CPU): operands rounded to bf16, math in "
                     "float32",
                     onednn_isa_name());
}

float* bf16_scratch(int64_t n, int slot) {
  thread_local std::vector<float> buffers[3];
  std::vector<float>& b = buffers[slot];
  if (b.size() < static_cast<size_t>(n)) b.resize(static_cast<size_t>(n));
  return b.data();
}

const float* widen_bf16(const void* x, int64_t n, int slot) {
  float* out = bf16_scratch(n, slot);
  cast_bf16_to_f32(static_cast<const uint16_t*>(x), out, n);
  return out;
}

}  // namespace dtrain::kernels
