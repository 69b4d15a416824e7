// The oneDNN plumbing every CPU kernel shares: one global engine, a stream and
// a scratchpad per calling thread, a shape-keyed primitive cache, and an
// execute helper. Primitives are created with a user-managed scratchpad, so a
// cached primitive may be executed from several threads at once.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "engine/kernels/ktype.hpp"

#if defined(__clang__)
#define DTRAIN_GUARDED_BY(x) __attribute__((guarded_by(x)))
#else
#define DTRAIN_GUARDED_BY(x)
#endif

namespace dtrain::onednn {

// The process-wide CPU engine (created on first use; thread-safe).
const dnnl::engine& cpu_engine();

// Attributes every cached primitive is created with (user scratchpad).
dnnl::primitive_attr default_attr();

// The oneDNN data type of a kernel operand type.
constexpr dnnl::memory::data_type data_type_of(kernels::KType t) {
  return t == kernels::KType::kBf16 ? dnnl::memory::data_type::bf16 : dnnl::memory::data_type::f32;
}

// A memory object over a caller-owned buffer laid out as `desc` (not copied,
// not owned).
dnnl::memory wrap(const dnnl::memory::desc& desc, const void* data);

// Executes `prim` on the calling thread's stream with `args`, adding a
// scratchpad of `scratchpad` (from the primitive descriptor) from the calling
// thread's buffer, and waits for completion.
void execute(const dnnl::primitive& prim, const dnnl::memory::desc& scratchpad,
             std::unordered_map<int, dnnl::memory> args);

// A 64-byte-aligned temporary buffer of at least `bytes` owned by the calling
// thread (slot 0..3 are independent); valid until the thread's next call with
// the same slot. For reordered operands.
void* thread_buffer(int slot, size_t bytes);

// A primitive descriptor creation failure is our bug (we only ask for
// supported shapes), reported with the operation and its shape key.
[[noreturn]] void fail(const std::string& what, const std::vector<int64_t>& key, const dnnl::error& e);

// A kernel called with operand types it does not implement (our bug, not the
// user's): `message` names the kernel, the types given and those supported.
[[noreturn]] void fail_types(const std::string& message);

// Cache of immutable values (primitive descriptors + primitives) keyed by the
// full shape/attribute tuple. get() returns a shared_ptr so an entry stays
// alive for callers even if the cache is cleared. Thread-safe; creation runs
// outside the lock (a racing duplicate is discarded).
template <class V>
class PrimitiveCache {
 public:
  using Key = std::vector<int64_t>;
  static constexpr size_t kMaxEntries = 512;

  template <class Make>
  std::shared_ptr<const V> get(const Key& key, Make&& make) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = map_.find(key);
      if (it != map_.end()) return it->second;
    }
    auto value = std::make_shared<const V>(make());
    std::lock_guard<std::mutex> lock(mu_);
    if (map_.size() >= kMaxEntries) map_.clear();
    return map_.try_emplace(key, std::move(value)).first->second;
  }

 private:
  std::mutex mu_;
  std::map<Key, std::shared_ptr<const V>> map_ DTRAIN_GUARDED_BY(mu_);
};

}  // namespace dtrain::onednn
