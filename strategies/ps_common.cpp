// Wire form of tensors for the parameter service (little-endian float32
// bytes plus shape) and the clock helpers of strategies/ps_internal.hpp.
#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cstring>

#include "strategies/ps_internal.hpp"

namespace dtrain::ps_internal {

static_assert(std::endian::native == std::endian::little, "the wire form is little-endian float32");

int64_t to_proto(const Tensor& t, ps::Tensor* out) {
  if (t.empty()) {
    out->set_absent(true);
    return 0;
  }
  for (int64_t d : t.shape()) out->add_shape(d);
  out->set_data(reinterpret_cast<const char*>(t.data()), t.bytes());
  return static_cast<int64_t>(t.bytes());
}

Result<Tensor> from_proto(const ps::Tensor& t) {
  if (t.absent()) return Tensor();
  Shape shape(t.shape().begin(), t.shape().end());
  for (int64_t d : shape) {
    if (d < 0) return cluster_error(fmt::format("a tensor of shape {} has a negative dimension", shape_str(shape)));
  }
  Tensor out(shape);
  if (t.data().size() != out.bytes()) {
    return cluster_error(fmt::format("a tensor of shape {} came with {} bytes instead of {}", shape_str(shape),
                                     t.data().size(), out.bytes()));
  }
  if (out.bytes() > 0) std::memcpy(out.data(), t.data().data(), out.bytes());
  return out;
}

void copy_payload(const ps::Tensor& t, Tensor& dst) {
  if (dst.bytes() > 0) std::memcpy(dst.data(), t.data().data(), dst.bytes());
}

int64_t payload_bytes(const ps::Tensor& t) { return static_cast<int64_t>(t.data().size()); }

}  // namespace dtrain::ps_internal
