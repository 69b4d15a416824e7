// Output-buffer reuse, window parsing and suggestions for the layers.
#include "engine/layers/layer_util.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <functional>

namespace dtrain {

bool overlaps(const Tensor& a, const Tensor& b) {
  if (a.empty() || b.empty() || a.numel() == 0 || b.numel() == 0) return false;
  if (!a.device().same_memory(b.device())) return false;
  const std::less<const char*> lt;
  const auto* pa = static_cast<const char*>(a.raw());
  const auto* pb = static_cast<const char*>(b.raw());
  return lt(pa, pb + b.bytes()) && lt(pb, pa + a.bytes());
}

void prepare_output(Tensor& out, const Shape& shape, std::initializer_list<const Tensor*> inputs) {
  prepare_output(out, shape, std::span<const Tensor* const>(inputs.begin(), inputs.size()));
}

void prepare_output(Tensor& out, const Shape& shape, std::span<const Tensor* const> inputs) {
  Device device = kHost;
  for (const Tensor* in : inputs) {
    if (in != nullptr && !in->empty()) {
      device = in->device();
      break;
    }
  }
  bool reuse = !out.empty() && out.numel() == num_elements(shape) && out.dtype() == DType::f32 &&
               out.device() == device;
  for (const Tensor* in : inputs) reuse = reuse && (in == nullptr || !overlaps(out, *in));  // null: an absent param
  if (!reuse) {
    out = Tensor::empty(shape, DType::f32, device);
  } else if (out.shape() != shape) {
    out = out.reshaped(shape);
  }
}

Shape with_batch(int64_t batch, const Shape& s) {
  Shape out{batch};
  out.insert(out.end(), s.begin(), s.end());
  return out;
}

Result<std::array<int64_t, 2>> window_pair(const std::vector<int64_t>& v, std::string_view field,
                                           std::array<int64_t, 2> fallback) {
  std::array<int64_t, 2> out = fallback;
  if (v.size() == 1) {
    out = {v[0], v[0]};
  } else if (v.size() == 2) {
    out = {v[0], v[1]};
  } else if (!v.empty()) {
    return config_error(fmt::format("{} must have 1 or 2 entries (height, width); got {}", field, shape_str(v)));
  }
  if (out[0] < 1 || out[1] < 1) {
    return config_error(fmt::format("{} entries must be >= 1; got {}", field, shape_str(v)));
  }
  return out;
}

Result<bool> parse_padding(const std::string& padding) {
  if (padding == "same") return true;
  if (padding == "valid") return false;
  return config_error(fmt::format("padding must be \"valid\" or \"same\"; got \"{}\"{}", padding,
                                  did_you_mean(padding, {"valid", "same"})));
}


std::string join(const std::vector<std::string>& words) {
  std::string out;
  for (size_t i = 0; i < words.size(); ++i) out += (i ? ", " : "") + words[i];
  return out;
}

}  // namespace dtrain
