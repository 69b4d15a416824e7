// The caching allocator's bookkeeping (policy in caching_allocator.hpp).
#include "engine/cuda/caching_allocator.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <tuple>
#include <utility>

namespace dtrain::cuda {

namespace {

void raise_peak(size_t now, size_t& peak) { peak = std::max(peak, now); }

bool should_split(bool small, size_t block, size_t request) {
  const size_t rest = block - request;
  return small ? rest >= kBlockAlignment : rest > kSmallLimit;
}

}  // namespace

bool CachingAllocator::BlockOrder::operator()(const Block* a, const Block* b) const {
  return std::tie(a->stream, a->size, a->ptr) < std::tie(b->stream, b->size, b->ptr);
}

size_t CachingAllocator::round_size(size_t bytes) {
  assert(bytes > 0);
  return (bytes + kBlockAlignment - 1) / kBlockAlignment * kBlockAlignment;
}

size_t CachingAllocator::segment_size(size_t rounded) {
  if (rounded <= kSmallLimit) return kSmallSegment;
  if (rounded < kLargeSegmentBelow) return kLargeSegment;
  return (rounded + kLargeRound - 1) / kLargeRound * kLargeRound;
}

CachingAllocator::CachingAllocator(std::unique_ptr<SegmentBackend> backend) : backend_(std::move(backend)) {}

CachingAllocator::~CachingAllocator() {
  std::lock_guard<std::mutex> lock(mu_);
  assert(active_.empty() && "CachingAllocator destroyed with blocks in use");
  release_unused_segments();
  // Blocks of segments still in use (only when the assert is compiled out).
  for (FreeSet* set : {&small_free_, &large_free_}) {
    for (Block* b : *set) delete b;
    set->clear();
  }
  for (auto& [ptr, b] : active_) delete b;
}

CachingAllocator::Block* CachingAllocator::take_best_fit(bool small, StreamId stream, size_t size) {
  FreeSet& set = pool(small);
  Block key;
  key.stream = stream;
  key.size = size;
  const auto it = set.lower_bound(&key);
  if (it == set.end() || (*it)->stream != stream) return nullptr;
  Block* b = *it;
  set.erase(it);
  return b;
}

Result<CachingAllocator::Block*> CachingAllocator::new_segment(size_t size, bool small, StreamId stream,
                                                               size_t request) {
  const size_t bytes = segment_size(size);
  Result<void*> seg = backend_->allocate(bytes);
  if (!seg.ok()) {
    ++stats_.backend_failures;
    // Cached but unused segments may be what the backend is missing.
    if (release_unused_segments() > 0) {
      seg = backend_->allocate(bytes);
      if (!seg.ok()) ++stats_.backend_failures;
    }
    if (!seg.ok()) {
      return runtime_error(fmt::format(
          "{}: out of memory: cannot allocate {} bytes (a {}-byte segment) with {} bytes in use and {} bytes "
          "reserved by dtrain's caching allocator: {}",
          backend_->name(), request, bytes, stats_.allocated_bytes, stats_.reserved_bytes, seg.error().message));
    }
  }
  auto* b = new Block;
  b->ptr = static_cast<char*>(*seg);
  b->size = bytes;
  b->stream = stream;
  b->small = small;
  ++stats_.backend_allocations;
  ++stats_.segments;
  stats_.reserved_bytes += bytes;
  raise_peak(stats_.reserved_bytes, stats_.peak_reserved_bytes);
  return b;
}

Result<void*> CachingAllocator::allocate(size_t bytes, StreamId stream) {
  if (bytes == 0) return static_cast<void*>(nullptr);
  const size_t size = round_size(bytes);
  const bool small = size <= kSmallLimit;
  std::lock_guard<std::mutex> lock(mu_);
  Block* b = take_best_fit(small, stream, size);
  if (b == nullptr) {
    Result<Block*> fresh = new_segment(size, small, stream, bytes);
    if (!fresh.ok()) return fresh.error();
    b = *fresh;
  }
  if (should_split(small, b->size, size)) {
    auto* rest = new Block;
    rest->ptr = b->ptr + size;
    rest->size = b->size - size;
    rest->stream = stream;
    rest->small = small;
    rest->prev = b;
    rest->next = b->next;
    if (b->next != nullptr) b->next->prev = rest;
    b->next = rest;
    b->size = size;
    pool(small).insert(rest);
  }
  b->allocated = true;
  b->requested = bytes;
  active_.emplace(b->ptr, b);
  ++stats_.allocations;
  ++stats_.active_blocks;
  stats_.allocated_bytes += b->size;
  stats_.requested_bytes += bytes;
  raise_peak(stats_.allocated_bytes, stats_.peak_allocated_bytes);
  return static_cast<void*>(b->ptr);
}

Result<CachedBuffer> CachingAllocator::allocate_buffer(size_t bytes, StreamId stream) {
  Result<void*> p = allocate(bytes, stream);
  if (!p.ok()) return p.error();
  return CachedBuffer(this, *p, bytes);
}

void CachingAllocator::free(void* ptr) {
  if (ptr == nullptr) return;
  std::lock_guard<std::mutex> lock(mu_);
  const auto it = active_.find(ptr);
  assert(it != active_.end() && "CachingAllocator::free of a pointer it did not hand out");
  if (it == active_.end()) return;
  Block* b = it->second;
  active_.erase(it);
  ++stats_.frees;
  --stats_.active_blocks;
  stats_.allocated_bytes -= b->size;
  stats_.requested_bytes -= b->requested;
  b->allocated = false;
  b->requested = 0;
  FreeSet& set = pool(b->small);
  // Merge with free neighbours of the same segment (erase from the set before
  // a block's size, part of its key, changes).
  if (Block* p = b->prev; p != nullptr && !p->allocated) {
    set.erase(p);
    p->size += b->size;
    p->next = b->next;
    if (b->next != nullptr) b->next->prev = p;
    delete b;
    b = p;
  }
  if (Block* n = b->next; n != nullptr && !n->allocated) {
    set.erase(n);
    b->size += n->size;
    b->next = n->next;
    if (n->next != nullptr) n->next->prev = b;
    delete n;
  }
  set.insert(b);
}

size_t CachingAllocator::release_unused_segments() {
  size_t released = 0;
  for (FreeSet* set : {&small_free_, &large_free_}) {
    for (auto it = set->begin(); it != set->end();) {
      Block* b = *it;
      if (b->prev != nullptr || b->next != nullptr) {  // part of a segment with a block in use
        ++it;
        continue;
      }
      it = set->erase(it);
      backend_->release(b->ptr, b->size);
      released += b->size;
      stats_.reserved_bytes -= b->size;
      --stats_.segments;
      ++stats_.backend_frees;
      delete b;
    }
  }
  return released;
}

size_t CachingAllocator::empty_cache() {
  std::lock_guard<std::mutex> lock(mu_);
  return release_unused_segments();
}

AllocatorStats CachingAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  AllocatorStats s = stats_;
  s.cached_blocks = small_free_.size() + large_free_.size();
  return s;
}

void CachingAllocator::reset_peaks() {
  std::lock_guard<std::mutex> lock(mu_);
  stats_.peak_allocated_bytes = stats_.allocated_bytes;
  stats_.peak_reserved_bytes = stats_.reserved_bytes;
}

size_t CachingAllocator::block_size(const void* ptr) const {
  std::lock_guard<std::mutex> lock(mu_);
  const auto it = active_.find(ptr);
  assert(it != active_.end());
  return it == active_.end() ? 0 : it->second->size;
}

CachedBuffer& CachedBuffer::operator=(CachedBuffer&& o) noexcept {
  if (this != &o) {
    reset();
    owner_ = o.owner_;
    ptr_ = o.ptr_;
    bytes_ = o.bytes_;
    o.release();
  }
  return *this;
}

void CachedBuffer::reset() {
  if (owner_ != nullptr) owner_->free(ptr_);
  release();
}

}  // namespace dtrain::cuda
