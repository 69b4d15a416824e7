// Tensor storage, views and transfers.
#include "engine/tensor.hpp"

#include <algorithm>
#include <bit>
#include <cassert>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace dtrain {

int64_t num_elements(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

std::string shape_str(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) out += ", ";
    out += std::to_string(s[i]);
  }
  return out + "]";
}

Tensor::Tensor(Shape shape) : Tensor(std::move(shape), 0.0f) {}

Tensor::Tensor(Shape shape, float fill_value) {
  *this = empty(std::move(shape), DType::f32, kHost);
  if (fill_value != 0.0f) fill(fill_value);
}

Tensor Tensor::empty(Shape shape, DType dtype, const Device& device) {
  Tensor t;
  t.shape_ = std::move(shape);
  t.numel_ = num_elements(t.shape_);
  t.dtype_ = dtype;
  t.storage_ = std::make_shared<Storage>(device, t.bytes());
  return t;
}

Tensor Tensor::zeros(Shape shape, DType dtype, const Device& device) {
  Tensor t = empty(std::move(shape), dtype, device);
  if (!device.is_host()) {
    const size_t words = (t.bytes() + 3) / 4;
    memory_of(device).fill32(device, t.raw(), 0, static_cast<int64_t>(words));
  }
  return t;
}

Tensor Tensor::from(Shape shape, const std::vector<float>& values) {
  Tensor t(std::move(shape));
  assert(static_cast<int64_t>(values.size()) == t.numel());
  std::copy(values.begin(), values.end(), t.data());
  return t;
}

const Device& Tensor::device() const { return storage_ ? storage_->device() : kHost; }

void Tensor::check_host(bool type_ok) const {
  if (storage_ == nullptr || (type_ok && device().is_host())) return;
  std::fprintf(stderr,
               "dtrain: internal error: host pointer requested for a %s tensor %s on %s; "
               "device tensors are read with to_host() and written with copy_from()\n",
               dtype_name(dtype_), shape_str(shape_).c_str(), device().str().c_str());
  std::abort();
}

Tensor Tensor::reshaped(Shape shape) const {
  assert(num_elements(shape) == numel_);
  Tensor t = *this;
  t.shape_ = std::move(shape);
  return t;
}

Tensor Tensor::released() const {
  Tensor t;
  t.shape_ = shape_;
  t.numel_ = numel_;
  t.dtype_ = dtype_;
  return t;
}

Tensor Tensor::rows(int64_t begin, int64_t end) const {
  assert(rank() >= 1 && 0 <= begin && begin <= end && end <= shape_[0]);
  const int64_t row = shape_[0] == 0 ? 0 : numel_ / shape_[0];
  Tensor t = *this;
  t.shape_[0] = end - begin;
  t.numel_ = row * (end - begin);
  t.offset_ = offset_ + row * begin;
  return t;
}

Tensor Tensor::clone() const {
  Tensor t = empty(shape_, dtype_, device());
  t.copy_from(*this);
  return t;
}

void Tensor::fill(float v) {
  assert(dtype_ == DType::f32);
  if (numel_ == 0) return;
  memory_of(device()).fill32(device(), raw(), std::bit_cast<uint32_t>(v), numel_);
}

void Tensor::zero() {
  if (numel_ == 0) return;
  if (bytes() % 4 == 0) {
    memory_of(device()).fill32(device(), raw(), 0, static_cast<int64_t>(bytes() / 4));
  } else {
    Tensor z = zeros(shape_, dtype_, kHost);
    copy_from(z);
  }
}

void Tensor::copy_from(const Tensor& src) {
  assert(src.numel() == numel_ && src.dtype() == dtype_);
  if (numel_ == 0) return;
  // The non-host side's memory does the copy (host<->host: plain memmove).
  const Device& moving = device().is_host() ? src.device() : device();
  memory_of(moving).copy(device(), raw(), src.device(), src.raw(), bytes());
}

Tensor Tensor::to_host() const { return to(kHost); }

Tensor Tensor::to(const Device& d) const {
  if (empty() || device().same_memory(d)) return *this;
  Tensor t = empty(shape_, dtype_, d);
  t.copy_from(*this);
  return t;
}

std::vector<float> Tensor::to_vector() const {
  const Tensor h = to_host();
  return {h.data(), h.data() + numel_};
}

}  // namespace dtrain
