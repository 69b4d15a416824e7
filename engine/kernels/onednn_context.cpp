// The global oneDNN engine, per-thread streams and scratchpads, and the
// execute helper shared by the CPU kernels.
#include "engine/kernels/onednn_context.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <new>

#include "engine/cpu_isa.hpp"
#include "engine/base/status.hpp"
#include "engine/tensor.hpp"

namespace dtrain::onednn {

const dnnl::engine& cpu_engine() {
  static const dnnl::engine engine = [] {
    apply_cpu_isa_cap_to_onednn();  // before oneDNN dispatches anything
    return dnnl::engine(dnnl::engine::kind::cpu, 0);
  }();
  return engine;
}

dnnl::primitive_attr default_attr() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

dnnl::memory wrap(const dnnl::memory::desc& desc, const void* data) {
  // oneDNN takes a non-const handle; read-only inputs are never written.
  return dnnl::memory(desc, cpu_engine(), const_cast<void*>(data));
}

namespace {

// A 64-byte-aligned byte buffer that only grows; one per thread.
class ScratchBuffer {
 public:
  ~ScratchBuffer() { std::free(data_); }
  void* reserve(size_t bytes) {
    if (bytes > capacity_) {
      std::free(data_);
      capacity_ = (bytes + 4095) / 4096 * 4096;
      data_ = std::aligned_alloc(64, capacity_);
      if (data_ == nullptr) throw std::bad_alloc();
    }
    return data_;
  }

 private:
  void* data_ = nullptr;
  size_t capacity_ = 0;
};

dnnl::stream& thread_stream() {
  thread_local dnnl::stream stream(cpu_engine());
  return stream;
}

}  // namespace

void* thread_buffer(int slot, size_t bytes) {
  thread_local ScratchBuffer buffers[4];
  return buffers[slot].reserve(bytes);
}

void execute(const dnnl::primitive& prim, const dnnl::memory::desc& scratchpad,
             std::unordered_map<int, dnnl::memory> args) {
  thread_local ScratchBuffer scratch;
  const size_t bytes = scratchpad.get_size();
  if (bytes > 0) args.emplace(DNNL_ARG_SCRATCHPAD, wrap(scratchpad, scratch.reserve(bytes)));
  dnnl::stream& stream = thread_stream();
  prim.execute(stream, args);
  stream.wait();
}

void fail(const std::string& what, const std::vector<int64_t>& key, const dnnl::error& e) {
  throw ErrorException{runtime_error(
      fmt::format("oneDNN could not create {} for shape key {}: {}", what, shape_str(key), e.what()))};
}

void fail_types(const std::string& message) { throw ErrorException{runtime_error(message)}; }

}  // namespace dtrain::onednn
