// BufferPool (engine/model/buffer_pool.hpp).
#include "engine/model/buffer_pool.hpp"

#include <algorithm>

namespace dtrain {

Tensor BufferPool::take(const Shape& shape, DType dtype, const Device& device) {
  const int64_t n = num_elements(shape);
  for (size_t i = free_.size(); i-- > 0;) {
    Tensor& b = free_[i].buffer;
    if (b.numel() == n && b.dtype() == dtype && b.device() == device) {
      Tensor t = b.shape() == shape ? std::move(b) : b.reshaped(shape);
      free_.erase(free_.begin() + static_cast<std::ptrdiff_t>(i));
      return t;
    }
  }
  Tensor t = Tensor::empty(shape, dtype, device);
  ++made_;
  std::erase_if(made_storage_, [](const std::weak_ptr<const Storage>& w) { return w.expired(); });
  made_storage_.push_back(t.watch());
  peak_ = std::max(peak_, bytes_held());
  return t;
}

void BufferPool::give(Tensor& t) {
  if (t.empty()) return;
  Tensor shape_only = t.released();
  if (t.sole_owner()) free_.push_back({std::move(t), pass_});
  t = std::move(shape_only);
}

void BufferPool::new_pass() {
  ++pass_;
  std::erase_if(free_, [this](const Free& f) { return f.used_pass < pass_ - 2; });
}

size_t BufferPool::bytes_held() const {
  size_t bytes = 0;
  for (const auto& w : made_storage_) {
    if (auto s = w.lock()) bytes += s->bytes();
  }
  return bytes;
}

size_t BufferPool::bytes_in_use() const {
  size_t free_bytes = 0;
  for (const Free& f : free_) free_bytes += f.buffer.bytes();
  return bytes_held() - free_bytes;
}

}  // namespace dtrain
