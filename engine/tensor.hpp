// Tensors: a shape, an element type, a device and a reference-counted
// Storage on that device. Copies share storage (like a handle); clone()
// makes a deep copy on the same device.
//
// Host access is explicit. data() / host_data<T>() hand out a pointer only
// for host tensors of the matching type, and report the misuse and abort for
// any other (asking a debug or GPU tensor for a host pointer is a bug, never
// a silent copy). Moving values between devices goes through copy_from(),
// to_host() and to(). Kernels of a backend reach their own memory through
// raw(), which checks nothing (engine/backend/ only).
//
// Not thread-safe for concurrent writes to the same storage; distinct tensors
// may be used from distinct threads.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "engine/base/device.hpp"
#include "engine/dtype.hpp"
#include "engine/storage.hpp"

namespace dtrain {

using Shape = std::vector<int64_t>;

int64_t num_elements(const Shape& s);
std::string shape_str(const Shape& s);  // "[2, 3]"

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(Shape shape);     // float32 on the host, zero-filled
  Tensor(Shape shape, float fill);  // float32 on the host
  static Tensor from(Shape shape, const std::vector<float>& values);  // float32 on the host
  // Uninitialised contents (zero on the host, NaN on the debug device).
  static Tensor empty(Shape shape, DType dtype, const Device& device);
  static Tensor zeros(Shape shape, DType dtype, const Device& device);

  const Shape& shape() const { return shape_; }
  int rank() const { return static_cast<int>(shape_.size()); }
  int64_t dim(int i) const { return shape_[static_cast<size_t>(i < 0 ? i + rank() : i)]; }
  int64_t numel() const { return numel_; }
  bool empty() const { return storage_ == nullptr; }
  DType dtype() const { return dtype_; }
  const Device& device() const;
  bool is_host() const { return device().is_host(); }
  size_t bytes() const { return static_cast<size_t>(numel_) * dtype_size(dtype_); }

  // REQUIRES: a float32 host tensor (else: message naming device and dtype,
  // then abort).
  float* data() { return host_data<float>(); }
  const float* data() const { return host_data<float>(); }
  float& operator[](int64_t i) { return data()[i]; }
  float operator[](int64_t i) const { return data()[i]; }
  // REQUIRES: a host tensor whose element size is sizeof(T) (uint16_t for
  // bf16/f16), of the matching kind.
  template <class T>
  T* host_data() {
    check_host(host_type_ok<T>(dtype_));
    return static_cast<T*>(raw());
  }
  template <class T>
  const T* host_data() const {
    check_host(host_type_ok<T>(dtype_));
    return static_cast<const T*>(raw());
  }
  // The first element's address in the device's own address space. For
  // backend kernels only: host code must not dereference it.
  void* raw() const { return storage_ ? static_cast<char*>(storage_->ptr()) + offset_ * dtype_size(dtype_) : nullptr; }

  // A view sharing storage with a new shape of the same element count.
  Tensor reshaped(Shape shape) const;
  // A view of rows [begin, end) along dimension 0, sharing storage.
  Tensor rows(int64_t begin, int64_t end) const;
  Tensor clone() const;
  bool shares_storage(const Tensor& o) const { return storage_ != nullptr && storage_ == o.storage_; }
  // Whether this is the only tensor viewing its storage (a buffer pool may
  // then reuse it: no other tensor can read or write it any more).
  bool sole_owner() const { return storage_ != nullptr && storage_.use_count() == 1; }
  // The same shape and dtype without storage (empty()): what a buffer pool
  // leaves where it took back a buffer whose values nobody reads any more
  // (a backward that only needs the shape still finds it).
  Tensor released() const;
  // A handle on the storage that does not keep it alive: whether it still
  // exists, and its size (a buffer pool's accounting).
  std::weak_ptr<const Storage> watch() const { return storage_; }
  // Sets every element (a float32 tensor on any device).
  void fill(float v);
  void zero();
  // Copies values from `src` (same numel and dtype; any devices) into this
  // tensor's storage. A host<->device copy is counted (copy_counts()).
  void copy_from(const Tensor& src);
  // A host tensor with these values (this tensor itself when on the host).
  Tensor to_host() const;
  // A copy on `device` (this tensor itself when already there).
  Tensor to(const Device& device) const;
  std::vector<float> to_vector() const;  // float32 values, copied to the host as needed

 private:
  template <class T>
  static bool host_type_ok(DType t) {
    if constexpr (std::is_same_v<T, float>) return t == DType::f32;
    if constexpr (std::is_same_v<T, uint16_t>) return t == DType::bf16 || t == DType::f16;
    if constexpr (std::is_same_v<T, int32_t>) return t == DType::i32;
    if constexpr (std::is_same_v<T, int64_t>) return t == DType::i64;
    if constexpr (std::is_same_v<T, uint8_t>) return t == DType::u8;
    return false;
  }
  // Reports and aborts unless this is a host tensor and type_ok.
  void check_host(bool type_ok) const;

  Shape shape_;
  int64_t numel_ = 0;
  int64_t offset_ = 0;  // in elements
  DType dtype_ = DType::f32;
  std::shared_ptr<Storage> storage_;
};

}  // namespace dtrain
