// The x86-64 instruction set dtrain's own CPU kernels may use, and the cap
// that lets any machine run them (and oneDNN's) as a smaller CPU would:
//   DTRAIN_MAX_CPU_ISA=baseline|sse4.2|avx2|avx512|avx512_bf16
// caps dtrain's dispatch (bf16 casts, softmax rows, CRC32C) and, unless
// ONEDNN_MAX_CPU_ISA is set, oneDNN's (AVX2 -> oneDNN's avx2, and so on).
// Without it, ONEDNN_MAX_CPU_ISA caps both (SSE41 -> baseline, AVX2 -> avx2,
// AVX512_CORE -> avx512, AVX512_CORE_BF16/AMX -> avx512_bf16). Read once per
// process; thread-safe.
#pragma once

#include <string>

#include "engine/base/status.hpp"

namespace dtrain {

// Ordered: each level includes the ones before it.
enum class CpuIsa : int {
  kBaseline = 0,    // x86-64 (SSE2)
  kSse42 = 1,       // + SSE4.2 (CRC32C instruction)
  kAvx2 = 2,        // x86-64-v3: AVX2, FMA, BMI
  kAvx512 = 3,      // x86-64-v4: AVX-512 F/BW/CD/DQ/VL
  kAvx512Bf16 = 4,  // + AVX512_BF16 (vcvtneps2bf16)
};

// Lower-case name as DTRAIN_MAX_CPU_ISA takes it ("avx2").
const char* cpu_isa_name(CpuIsa isa);

// What this CPU has.
CpuIsa cpu_isa_detected();

// What dtrain's kernels use: the detected level, lowered to the cap.
CpuIsa cpu_isa();

// An error (exit code 2) when DTRAIN_MAX_CPU_ISA holds a name that is not one
// of the levels; ok otherwise. The value is then ignored (no cap).
Status check_cpu_isa_cap();

// For `dtrain devices`: "avx2 (capped by DTRAIN_MAX_CPU_ISA=avx2; the CPU has
// avx512_bf16)", or just "avx512_bf16" when nothing caps.
std::string describe_cpu_isa();

// The ISA oneDNN dispatches to (after the cap): "avx2", "avx512_core_bf16".
std::string onednn_isa_name();

// Applies the cap to oneDNN once, before its first primitive: a no-op when
// ONEDNN_MAX_CPU_ISA is set (oneDNN reads it itself) or nothing caps.
void apply_cpu_isa_cap_to_onednn();

// The attributes that compile a function for x86-64-v4 (AVX-512) or
// x86-64-v3 (AVX2): the kernels' clones that pick_for_cpu_isa chooses from.
#if defined(__x86_64__) && defined(__GNUC__)
#define DTRAIN_V4 [[gnu::target("arch=x86-64-v4")]]
#define DTRAIN_V3 [[gnu::target("arch=x86-64-v3")]]
#else
#define DTRAIN_V4
#define DTRAIN_V3
#endif

// One of three builds of a kernel (compiled for x86-64-v4, x86-64-v3 and the
// baseline) by cpu_isa(): call once and keep the pointer.
template <class F>
F pick_for_cpu_isa(F v4, F v3, F baseline) {
  const CpuIsa isa = cpu_isa();
  return isa >= CpuIsa::kAvx512 ? v4 : isa >= CpuIsa::kAvx2 ? v3 : baseline;
}

}  // namespace dtrain
