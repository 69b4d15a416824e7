// GlooComm: Gloo's TCP full mesh, bootstrapped through the coordination
// service's key-value store, with ring all-reduce (all-gather and sum when small), an all-reduce in a fixed order, broadcast and barrier.
// Gloo reports a dead peer or a timeout by throwing; we turn that into kCluster errors.
#include "strategies/gloo_comm.hpp"

#include <fmt/format.h>
#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/alltoall.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/common/error.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <stdexcept>
#include <vector>

#include "strategies/tree_sum.hpp"

namespace dtrain {

namespace {

// Carries a coordination error through Gloo's rendezvous, which knows only exceptions.
struct StoreError : std::runtime_error {
  explicit StoreError(Error e) : std::runtime_error(e.message), error(std::move(e)) {}
  Error error;
};

// Gloo's rendezvous store over the coordination service; keys get `prefix`/.
class CoordStore final : public gloo::rendezvous::Store {
 public:
  CoordStore(CoordinationClient& client, std::string prefix, std::chrono::milliseconds timeout,
             std::function<bool()> superseded)
      : client_(client), prefix_(std::move(prefix)), timeout_(timeout), superseded_(std::move(superseded)) {}

  void set(const std::string& key, const std::vector<char>& data) override {
    Status s = client_.set(full(key), std::string(data.begin(), data.end()));
    if (!s.ok()) throw StoreError(s.error());
  }

  // Gloo's connectFullMesh reads a peer's key with get() (it blocks until
  // the key is set) as well as with wait().
  std::vector<char> get(const std::string& key) override {
    const std::string v = fetch(key, timeout_);
    return {v.begin(), v.end()};
  }

  void wait(const std::vector<std::string>& keys) override { wait(keys, timeout_); }

  // Gloo waits for one peer's key at a time; each wait gets the whole timeout.
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override {
    for (const std::string& key : keys) fetch(key, timeout);
  }

 private:
  std::string full(const std::string& key) const { return prefix_ + "/" + key; }

  // The value of `key` once it is set (at most `timeout`). Elastic: a peer
  // lost while the group forms, or gone on to a newer membership, never sets
  // its key: every 100 ms the wait gives up if a newer membership was posted
  // (the caller forms that one instead).
  std::string fetch(const std::string& key, std::chrono::milliseconds timeout) {
    if (!superseded_) {
      Result<std::string> v = client_.get(full(key), timeout);
      if (!v.ok()) throw StoreError(v.error());
      return *v;
    }
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      Result<std::string> v = client_.get(full(key), std::clamp(left, std::chrono::milliseconds(1),
                                                                std::chrono::milliseconds(100)));
      if (v.ok()) return *v;
      if (superseded_()) throw StoreError(cluster_error("the membership changed while the group formed"));
      if (left.count() <= 0) throw StoreError(v.error());
    }
  }

  CoordinationClient& client_;
  const std::string prefix_;
  const std::chrono::milliseconds timeout_;
  const std::function<bool()> superseded_;
};

}  // namespace

// Gathered bytes (buffer x ranks) up to which all_reduce_sum gathers and sums
// instead of running the ring (GlooComm::Impl::gathered_sum).
constexpr size_t kGatheredSumBytes = 256 * 1024;

class GlooComm::Impl {
 public:
  Impl(std::shared_ptr<gloo::rendezvous::Context> context, std::chrono::milliseconds timeout)
      : context_(std::move(context)), timeout_(timeout) {}

  int rank() const { return context_->rank; }
  int size() const { return context_->size; }

  // Runs one collective; a Gloo exception marks the communicator broken.
  template <class F>
  Status run(const char* what, F&& collective) {
    if (broken_) return *broken_;
    try {
      collective();
      return {};
    } catch (const std::exception& e) {
      broken_ = cluster_error(fmt::format("gloo {} (rank {} of {}): {}", what, rank(), size(), e.what()));
      return *broken_;
    }
  }

  template <class T>
  Status all_reduce_sum(T* data, size_t count) {
    if (count == 0) return {};
    const auto n = static_cast<size_t>(size());
    if (n == 1) return {};
    if (count * sizeof(T) * n <= kGatheredSumBytes) return gathered_sum(data, count);
    return run("all_reduce_sum", [&] {
      gloo::AllreduceOptions opts(context_);
      opts.setAlgorithm(gloo::AllreduceOptions::Algorithm::RING);
      opts.setOutput(data, count);
      opts.setReduceFunction(
          static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::sum<T>));
      opts.setTag(next_tag());
      opts.setTimeout(timeout_);
      gloo::allreduce(opts);
    });
  }

  // A small all-reduce: every rank's buffer gathered on every rank (a ring
  // all-gather, n - 1 rounds of messages against the ring all-reduce's
  // 2(n - 1)), then summed in tree_sum's order over the ranks, the same bits
  // on every rank. Its time is latency: per-step sums, a last small bucket.
  template <class T>
  Status gathered_sum(T* data, size_t count) {
    const auto n = static_cast<size_t>(size());
    std::vector<T> all(count * n);
    return run("all_reduce_sum", [&] {
      gloo::AllgatherOptions opts(context_);
      opts.setInput(data, count);
      opts.setOutput(all.data(), all.size());
      opts.setTag(next_tag());
      opts.setTimeout(timeout_);
      gloo::allgather(opts);
      tree_sum(n, [&](size_t into, size_t from) {
        T* __restrict a = all.data() + into * count;
        const T* __restrict b = all.data() + from * count;
        for (size_t i = 0; i < count; ++i) a[i] += b[i];
      });
      std::copy(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(count), data);
    });
  }

  // Rank r owns chunk r of the (padded) buffer: an all-to-all brings it
  // every rank's chunk r, rank r adds them in tree_sum's order over the
  // ranks, and an all-gather returns every owner's sum to every rank. The
  // ring's bytes, and a grouping that does not depend on the chunk.
  Status all_reduce_sum_ordered(float* data, size_t count) {
    if (count == 0) return {};
    const auto n = static_cast<size_t>(size());
    if (n == 1) return {};
    const size_t chunk = (count + n - 1) / n;
    send_.assign(chunk * n, 0.0f);
    std::copy(data, data + count, send_.begin());
    recv_.resize(chunk * n);
    if (Status s = run("all_reduce_sum_ordered (all-to-all)", [&] {
          gloo::AlltoallOptions opts(context_);
          opts.setInput(send_.data(), send_.size());
          opts.setOutput(recv_.data(), recv_.size());
          opts.setTag(next_tag());
          opts.setTimeout(timeout_);
          gloo::alltoall(opts);
        });
        !s) {
      return s;
    }
    // recv_ holds rank j's copy of this rank's chunk at j * chunk.
    auto add = [&](size_t into, size_t from) {
      float* __restrict a = recv_.data() + into * chunk;
      const float* __restrict b = recv_.data() + from * chunk;
      for (size_t i = 0; i < chunk; ++i) a[i] += b[i];
    };
    if (bounds_.empty()) {
      tree_sum(n, add);
    } else {
      tree_sum_ranges(bounds_, add);
    }
    return run("all_reduce_sum_ordered (all-gather)", [&] {
      gloo::AllgatherOptions opts(context_);
      opts.setInput(recv_.data(), chunk);
      opts.setOutput(send_.data(), send_.size());
      opts.setTag(next_tag());
      opts.setTimeout(timeout_);
      gloo::allgather(opts);
      std::copy(send_.begin(), send_.begin() + static_cast<std::ptrdiff_t>(count), data);
    });
  }

  void set_ordered_parts(std::vector<size_t> bounds) { bounds_ = std::move(bounds); }

  Status broadcast(void* data, size_t bytes, int root) {
    if (root < 0 || root >= size()) {
      return cluster_error(fmt::format("gloo broadcast: root {} is not a rank of {}", root, size()));
    }
    if (bytes == 0) return {};
    return run("broadcast", [&] {
      gloo::BroadcastOptions opts(context_);
      opts.setOutput(static_cast<uint8_t*>(data), bytes);
      opts.setRoot(root);
      opts.setTag(next_tag());
      opts.setTimeout(timeout_);
      gloo::broadcast(opts);
    });
  }

  Status barrier() {
    return run("barrier", [&] {
      gloo::BarrierOptions opts(context_);
      opts.setTag(next_tag());
      opts.setTimeout(timeout_);
      gloo::barrier(opts);
    });
  }

 private:
  // Every rank issues the same sequence of collectives, so tags agree.
  uint32_t next_tag() { return tag_++; }

  std::shared_ptr<gloo::rendezvous::Context> context_;
  const std::chrono::milliseconds timeout_;
  uint32_t tag_ = 0;
  std::optional<Error> broken_;  // the error that broke the communicator
  std::vector<float> send_, recv_;  // all_reduce_sum_ordered's staging
  std::vector<size_t> bounds_;      // set_ordered_parts (empty: one part per rank)
};

Result<std::unique_ptr<GlooComm>> GlooComm::create(CoordinationClient& client, int rank, int size,
                                                   const std::string& bind_host, double timeout_secs,
                                                   const std::string& prefix, std::function<bool()> superseded) {
  if (size < 1 || rank < 0 || rank >= size) {
    return cluster_error(fmt::format("gloo: rank {} is not a rank of a communicator of size {}", rank, size));
  }
  auto timeout = std::chrono::milliseconds(static_cast<int64_t>(timeout_secs * 1000));
  try {
    gloo::transport::tcp::attr attr;
    attr.hostname = bind_host;  // "" = the hostname, as Gloo resolves it
    std::shared_ptr<gloo::transport::Device> device = gloo::transport::tcp::CreateDevice(attr);
    auto context = std::make_shared<gloo::rendezvous::Context>(rank, size);
    context->setTimeout(timeout);
    CoordStore store(client, prefix, timeout, std::move(superseded));
    context->connectFullMesh(store, device);
    return std::unique_ptr<GlooComm>(new GlooComm(std::make_unique<Impl>(std::move(context), timeout)));
  } catch (const StoreError& e) {
    return cluster_error(fmt::format("gloo: connecting rank {} of {}: {}", rank, size, e.error.message));
  } catch (const std::exception& e) {
    std::string host = bind_host.empty() ? "this host's name" : bind_host;
    return cluster_error(
        fmt::format("gloo: connecting rank {} of {} (bound on {}) failed: {}", rank, size, host, e.what()));
  }
}

GlooComm::GlooComm(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
GlooComm::~GlooComm() = default;
int GlooComm::rank() const { return impl_->rank(); }
int GlooComm::size() const { return impl_->size(); }
Status GlooComm::all_reduce_sum(float* data, size_t count) { return impl_->all_reduce_sum(data, count); }
Status GlooComm::all_reduce_sum(double* data, size_t count) { return impl_->all_reduce_sum(data, count); }
Status GlooComm::all_reduce_sum_ordered(float* data, size_t count) {
  return impl_->all_reduce_sum_ordered(data, count);
}
void GlooComm::set_ordered_parts(std::vector<size_t> bounds) { impl_->set_ordered_parts(std::move(bounds)); }
Status GlooComm::broadcast(void* data, size_t bytes, int root) { return impl_->broadcast(data, bytes, root); }
Status GlooComm::barrier() { return impl_->barrier(); }

}  // namespace dtrain
