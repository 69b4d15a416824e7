// The CPU's instruction set, the DTRAIN_MAX_CPU_ISA / ONEDNN_MAX_CPU_ISA cap,
// and handing the cap to oneDNN (see cpu_isa.hpp).
#include "engine/cpu_isa.hpp"

#include <fmt/format.h>
#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <string_view>
#include <utility>

namespace dtrain {
namespace {

constexpr std::array<std::pair<std::string_view, CpuIsa>, 5> kNames{{
    {"baseline", CpuIsa::kBaseline},
    {"sse4.2", CpuIsa::kSse42},
    {"avx2", CpuIsa::kAvx2},
    {"avx512", CpuIsa::kAvx512},
    {"avx512_bf16", CpuIsa::kAvx512Bf16},
}};

// oneDNN's names (ONEDNN_MAX_CPU_ISA) mapped to the level that holds them.
constexpr std::array<std::pair<std::string_view, CpuIsa>, 11> kOnednnNames{{
    {"sse41", CpuIsa::kBaseline},
    {"avx", CpuIsa::kSse42},
    {"avx2", CpuIsa::kAvx2},
    {"avx2_vnni", CpuIsa::kAvx2},
    {"avx512_core", CpuIsa::kAvx512},
    {"avx512_core_vnni", CpuIsa::kAvx512},
    {"avx512_core_bf16", CpuIsa::kAvx512Bf16},
    {"avx512_core_fp16", CpuIsa::kAvx512Bf16},
    {"avx512_core_amx", CpuIsa::kAvx512Bf16},
    {"avx512_core_amx_fp16", CpuIsa::kAvx512Bf16},
    {"all", CpuIsa::kAvx512Bf16},
}};

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

template <size_t N>
std::optional<CpuIsa> find(const std::array<std::pair<std::string_view, CpuIsa>, N>& table, std::string_view name) {
  const std::string key = lower(name);
  for (const auto& [n, isa] : table) {
    if (n == key) return isa;
  }
  return std::nullopt;
}

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : nullptr;
}

// Where the cap comes from and its level; nullopt when nothing caps (or the
// value is not a level: check_cpu_isa_cap reports it).
struct Cap {
  std::optional<CpuIsa> level;
  std::string source;  // "DTRAIN_MAX_CPU_ISA=avx2"
};

const Cap& cap() {
  static const Cap c = [] {
    Cap out;
    if (const char* v = env("DTRAIN_MAX_CPU_ISA")) {
      out.level = find(kNames, v);
      out.source = fmt::format("DTRAIN_MAX_CPU_ISA={}", v);
    } else if (const char* o = env("ONEDNN_MAX_CPU_ISA")) {
      out.level = find(kOnednnNames, o);
      out.source = fmt::format("ONEDNN_MAX_CPU_ISA={}", o);
    }
    return out;
  }();
  return c;
}

}  // namespace

const char* cpu_isa_name(CpuIsa isa) {
  for (const auto& [n, level] : kNames) {
    if (level == isa) return n.data();
  }
  return "baseline";
}

CpuIsa cpu_isa_detected() {
  static const CpuIsa detected = [] {
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    const bool v4 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                    __builtin_cpu_supports("avx512cd") && __builtin_cpu_supports("avx512dq") &&
                    __builtin_cpu_supports("avx512vl");
    const bool v3 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                    __builtin_cpu_supports("bmi2") && __builtin_cpu_supports("avx");
    if (v3 && v4 && __builtin_cpu_supports("avx512bf16")) return CpuIsa::kAvx512Bf16;
    if (v3 && v4) return CpuIsa::kAvx512;
    if (v3) return CpuIsa::kAvx2;
    if (__builtin_cpu_supports("sse4.2")) return CpuIsa::kSse42;
#endif
    return CpuIsa::kBaseline;
  }();
  return detected;
}

CpuIsa cpu_isa() {
  const CpuIsa detected = cpu_isa_detected();
  const auto& c = cap();
  return c.level && *c.level < detected ? *c.level : detected;
}

Status check_cpu_isa_cap() {
  const char* v = env("DTRAIN_MAX_CPU_ISA");
  if (v == nullptr || find(kNames, v)) return Status::Ok();
  return config_error(fmt::format(
      "DTRAIN_MAX_CPU_ISA: \"{}\" is not one of baseline, sse4.2, avx2, avx512, avx512_bf16 (unset it to use "
      "everything this CPU has)",
      v));
}

std::string describe_cpu_isa() {
  const CpuIsa used = cpu_isa(), detected = cpu_isa_detected();
  if (used != detected) {
    return fmt::format("{} (capped by {}; the CPU has {})", cpu_isa_name(used), cap().source, cpu_isa_name(detected));
  }
  if (cap().level) return fmt::format("{} ({} allows as much or more)", cpu_isa_name(used), cap().source);
  return cpu_isa_name(used);
}

std::string onednn_isa_name() {
  apply_cpu_isa_cap_to_onednn();
  switch (dnnl::get_effective_cpu_isa()) {
    case dnnl::cpu_isa::sse41: return "sse41";
    case dnnl::cpu_isa::avx: return "avx";
    case dnnl::cpu_isa::avx2: return "avx2";
    case dnnl::cpu_isa::avx2_vnni: return "avx2_vnni";
    case dnnl::cpu_isa::avx512_mic: return "avx512_mic";
    case dnnl::cpu_isa::avx512_mic_4ops: return "avx512_mic_4ops";
    case dnnl::cpu_isa::avx512_core: return "avx512_core";
    case dnnl::cpu_isa::avx512_core_vnni: return "avx512_core_vnni";
    case dnnl::cpu_isa::avx512_core_bf16: return "avx512_core_bf16";
    case dnnl::cpu_isa::avx512_core_amx: return "avx512_core_amx";
    default: return "other";
  }
}

void apply_cpu_isa_cap_to_onednn() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (env("ONEDNN_MAX_CPU_ISA") != nullptr || env("DNNL_MAX_CPU_ISA") != nullptr) return;
    const auto& c = cap();
    if (!c.level) return;
    dnnl::cpu_isa isa = dnnl::cpu_isa::all;
    switch (*c.level) {
      case CpuIsa::kBaseline: isa = dnnl::cpu_isa::sse41; break;
      case CpuIsa::kSse42: isa = dnnl::cpu_isa::avx; break;
      case CpuIsa::kAvx2: isa = dnnl::cpu_isa::avx2; break;
      case CpuIsa::kAvx512: isa = dnnl::cpu_isa::avx512_core; break;
      case CpuIsa::kAvx512Bf16: isa = dnnl::cpu_isa::all; break;
    }
    try {
      dnnl::set_max_cpu_isa(isa);
    } catch (const dnnl::error&) {
      // oneDNN already dispatched (a primitive ran before the cap): it keeps
      // its own choice; describe_onednn_isa() shows which.
    }
  });
}

}  // namespace dtrain
