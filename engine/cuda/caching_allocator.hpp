// A caching allocator for one GPU's memory: blocks carved out of large
// backing segments, kept per stream after free and handed out again, so a
// training step that repeats the same allocations makes no cudaMalloc or
// cudaFree calls once warm. The policy is pure C++ over a SegmentBackend (the
// real one is cudaMalloc/cudaFree, device_context.hpp; tests use host memory).
//
// Policy (PyTorch's, simplified):
//  - sizes round up to a multiple of kBlockAlignment (512 bytes);
//  - requests up to kSmallLimit (1 MiB) come from a small pool of 2 MiB
//    segments; larger ones from a large pool: below 10 MiB a 20 MiB segment,
//    otherwise the size rounded up to 2 MiB;
//  - a free block is reused only by the stream it was allocated on (best fit:
//    the smallest cached block of that stream and pool that is big enough);
//  - a block much larger than the request is split (small pool: when 512
//    bytes or more remain; large pool: when more than 1 MiB remains) and
//    neighbouring free blocks of one segment merge again on free;
//  - empty_cache() returns segments with no block in use to the backend; so
//    does an allocation the backend cannot satisfy, which then retries once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>

#include "engine/base/status.hpp"

#ifndef DTRAIN_GUARDED_BY
#if defined(__clang__)
#define DTRAIN_GUARDED_BY(x) __attribute__((guarded_by(x)))
#else
#define DTRAIN_GUARDED_BY(x)
#endif
#endif

namespace dtrain::cuda {

inline constexpr size_t kBlockAlignment = 512;
inline constexpr size_t kSmallLimit = size_t{1} << 20;
inline constexpr size_t kSmallSegment = size_t{2} << 20;
inline constexpr size_t kLargeSegmentBelow = size_t{10} << 20;
inline constexpr size_t kLargeSegment = size_t{20} << 20;
inline constexpr size_t kLargeRound = size_t{2} << 20;

// The memory under the cache. Called with the allocator's lock held, never
// concurrently for one allocator.
class SegmentBackend {
 public:
  virtual ~SegmentBackend() = default;
  // A new segment of exactly `bytes` bytes aligned to at least
  // kBlockAlignment, or a kRuntime Error saying why not (out of memory).
  virtual Result<void*> allocate(size_t bytes) = 0;
  // Takes back a segment from allocate(); `bytes` is the size it had.
  virtual void release(void* segment, size_t bytes) = 0;
  // For messages, e.g. "gpu:0".
  virtual std::string name() const = 0;
};

// The stream a block belongs to: a cudaStream_t as an integer (0 is the
// legacy default stream).
using StreamId = std::uintptr_t;

struct AllocatorStats {
  size_t allocated_bytes = 0;       // blocks handed out and not freed, at their rounded sizes
  size_t requested_bytes = 0;       // the same blocks at the sizes asked for
  size_t reserved_bytes = 0;        // segments held from the backend
  size_t peak_allocated_bytes = 0;  // maxima since construction or reset_peaks()
  size_t peak_reserved_bytes = 0;
  uint64_t backend_allocations = 0;  // segments obtained (successful cudaMalloc calls)
  uint64_t backend_frees = 0;        // segments given back (cudaFree calls)
  uint64_t backend_failures = 0;     // backend allocate() errors, including ones a retry fixed
  uint64_t allocations = 0;          // allocate() calls that returned a block
  uint64_t frees = 0;                // free() calls that returned a block
  size_t segments = 0;               // segments held now
  size_t active_blocks = 0;          // blocks handed out now
  size_t cached_blocks = 0;          // free blocks held now
};

class CachedBuffer;

// Thread-safe: every member function takes the allocator's lock.
class CachingAllocator {
 public:
  explicit CachingAllocator(std::unique_ptr<SegmentBackend> backend);
  // Returns every segment to the backend.
  // REQUIRES: no block is in use (asserted; in release builds the segments of
  // blocks still in use are leaked rather than freed under their users).
  ~CachingAllocator();
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  // `bytes` bytes for work in the order of `stream`, aligned to
  // kBlockAlignment; nullptr for 0 bytes. The error (kRuntime) names the
  // backend, the request, the backend's own error and this allocator's usage.
  Result<void*> allocate(size_t bytes, StreamId stream);
  // The same as an owning handle that frees on destruction.
  Result<CachedBuffer> allocate_buffer(size_t bytes, StreamId stream);
  // Returns a block to the cache of the stream it was allocated on, which may
  // hand it out at once to later work on that stream: like cudaFreeAsync, the
  // caller must already have ordered every use of the block on other streams
  // before that stream's later work (an event the stream waits on). nullptr
  // is ignored.
  // REQUIRES: ptr came from allocate() of this allocator and is not yet freed.
  void free(void* ptr);
  // Gives every segment that has no block in use back to the backend.
  // Returns the number of bytes given back.
  size_t empty_cache();

  AllocatorStats stats() const;
  void reset_peaks();  // peak_* := the current values
  // The rounded size of a block in use. REQUIRES: ptr is in use.
  size_t block_size(const void* ptr) const;
  std::string name() const { return backend_->name(); }

  // The block size for a request of `bytes` (> 0): a multiple of kBlockAlignment.
  static size_t round_size(size_t bytes);
  // The segment obtained when no cached block fits a block of `rounded` bytes.
  static size_t segment_size(size_t rounded);

 private:
  // A piece of a segment; blocks of one segment form a doubly linked list in
  // address order. Free blocks are in exactly one of the free sets.
  struct Block {
    char* ptr = nullptr;
    size_t size = 0;
    size_t requested = 0;  // bytes asked for, while allocated
    StreamId stream = 0;
    bool small = false;
    bool allocated = false;
    Block* prev = nullptr;
    Block* next = nullptr;
  };
  // Orders by (stream, size, address): lower_bound finds the best fit of a stream.
  struct BlockOrder {
    bool operator()(const Block* a, const Block* b) const;
  };
  using FreeSet = std::set<Block*, BlockOrder>;

  FreeSet& pool(bool small) { return small ? small_free_ : large_free_; }
  Block* take_best_fit(bool small, StreamId stream, size_t size);  // REQUIRES: mu_ held
  Result<Block*> new_segment(size_t size, bool small, StreamId stream, size_t request);  // REQUIRES: mu_ held
  size_t release_unused_segments();  // REQUIRES: mu_ held

  const std::unique_ptr<SegmentBackend> backend_;
  mutable std::mutex mu_;
  FreeSet small_free_ DTRAIN_GUARDED_BY(mu_);
  FreeSet large_free_ DTRAIN_GUARDED_BY(mu_);
  std::unordered_map<const void*, Block*> active_ DTRAIN_GUARDED_BY(mu_);
  AllocatorStats stats_ DTRAIN_GUARDED_BY(mu_);
};

// Owns one block of a CachingAllocator; frees it on destruction. Movable.
// REQUIRES: the allocator outlives the buffer.
class CachedBuffer {
 public:
  CachedBuffer() = default;
  CachedBuffer(CachingAllocator* owner, void* ptr, size_t bytes) : owner_(owner), ptr_(ptr), bytes_(bytes) {}
  CachedBuffer(CachedBuffer&& o) noexcept : owner_(o.owner_), ptr_(o.ptr_), bytes_(o.bytes_) { o.release(); }
  CachedBuffer& operator=(CachedBuffer&& o) noexcept;
  CachedBuffer(const CachedBuffer&) = delete;
  CachedBuffer& operator=(const CachedBuffer&) = delete;
  ~CachedBuffer() { reset(); }

  void* get() const { return ptr_; }
  float* floats() const { return static_cast<float*>(ptr_); }
  size_t bytes() const { return bytes_; }  // as requested
  void reset();  // frees the block now

 private:
  void release() {
    owner_ = nullptr;
    ptr_ = nullptr;
    bytes_ = 0;
  }
  CachingAllocator* owner_ = nullptr;
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace dtrain::cuda
