// Device names.
#include "engine/base/device.hpp"

#include <fmt/format.h>

#include <charconv>

namespace dtrain {

std::string Device::str() const {
  switch (kind) {
    case DeviceKind::cpu: return fmt::format("cpu:{}", index);
    case DeviceKind::debug: return fmt::format("debug:{}", index);
    case DeviceKind::cuda: return fmt::format("gpu:{}", index);
  }
  return "?";
}

std::string device_list(const std::vector<Device>& devices) {
  std::string out;
  for (const Device& d : devices) {
    if (!out.empty()) out += ", ";
    out += d.str();
  }
  return out;
}

Result<Device> parse_device(std::string_view name) {
  struct Prefix {
    std::string_view text;
    DeviceKind kind;
  };
  constexpr Prefix kPrefixes[] = {
      {"cpu:", DeviceKind::cpu}, {"debug:", DeviceKind::debug}, {"gpu:", DeviceKind::cuda}, {"cuda:", DeviceKind::cuda}};
  for (const Prefix& p : kPrefixes) {
    if (!name.starts_with(p.text)) continue;
    const std::string_view digits = name.substr(p.text.size());
    int index = -1;
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
    if (ec == std::errc() && end == digits.data() + digits.size() && index >= 0 && !digits.empty()) {
      return Device{p.kind, index};
    }
    break;
  }
  return config_error(fmt::format("\"{}\" is not a device; expected cpu:N, debug:N or gpu:N (N = 0, 1, ...)", name));
}

}  // namespace dtrain
