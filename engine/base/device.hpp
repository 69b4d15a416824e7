// Devices a tensor can live on: the host CPU (cpu:N are virtual CPU devices
// sharing host memory), the debug device (CPU kernels over memory that is
// inaccessible outside its own kernels) and CUDA GPUs (gpu:N, also cuda:N).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "engine/base/status.hpp"

namespace dtrain {

enum class DeviceKind : uint8_t { cpu, debug, cuda };

struct Device {
  DeviceKind kind = DeviceKind::cpu;
  int index = 0;

  // True when host code may read and write this device's memory directly.
  bool is_host() const { return kind == DeviceKind::cpu; }
  // Two devices share memory (a tensor of one may be used by the other's
  // kernels without a copy): every cpu:N is host memory; others are their own.
  bool same_memory(const Device& o) const { return kind == o.kind && (kind == DeviceKind::cpu || index == o.index); }
  bool operator==(const Device&) const = default;
  std::string str() const;  // "cpu:0", "debug:1", "gpu:0"
};

inline constexpr Device kHost{DeviceKind::cpu, 0};

// The devices' names joined by ", " ("cpu:0, cpu:1"), as messages list them.
std::string device_list(const std::vector<Device>& devices);

// "cpu:N", "debug:N", "gpu:N" or "cuda:N" (N >= 0). The error says what is
// accepted (no place: callers add the job field).
Result<Device> parse_device(std::string_view name);

}  // namespace dtrain
