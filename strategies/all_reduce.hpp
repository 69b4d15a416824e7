// Gradient buckets and the in-process all-reduce of the mirrored strategy on
// CPU devices. Buckets group trainable variables in the order backward
// finishes them (last layer first) so each bucket is reduced as soon as every
// replica has its gradients, while earlier layers are still in backward.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "engine/base/status.hpp"

#include "engine/model/model.hpp"
#include "engine/profiler.hpp"

namespace dtrain {

struct GradBuckets {
  std::vector<std::vector<size_t>> vars;         // bucket -> variable indices
  std::vector<std::vector<size_t>> after_layer;  // layer -> buckets complete once its backward is done
};

// The first bucket's size cap (PyTorch DDP's first bucket): small, so that the
// first all-reduce starts early in backward even when the whole model would
// fit one bucket of bucket_bytes.
constexpr double kFirstBucketBytes = 1024.0 * 1024.0;

// Trainable variables in the order backward finishes them (last variable
// first), cut into buckets as DDP does: a variable joins the open bucket,
// which closes once it holds at least its cap (min(kFirstBucketBytes,
// bucket_bytes) for the first, bucket_bytes after). A bucket is complete
// after the backward of the layer owning its lowest-numbered variable.
GradBuckets make_buckets(const Model& model, double bucket_bytes);

// Sums the gradients of `vars` over every replica into replica 0's, grouped
// as tree_sum does over the replicas in order ((g0 + g1) + g2 for three,
// (g0 + g1) + (g2 + g3) for four). Towers, mirrored and collective reduce
// through this, so their results carry the same bits.
void sum_into_first(std::span<ReplicaState* const> states, const std::vector<size_t>& vars);

// Reduces one bucket across worker processes, in place in replica 0's
// gradients (the collective strategy's Gloo all-reduce).
using CrossReduce = std::function<Status(size_t bucket)>;

// In-process all-reduce (sum) over the replicas of one process, optionally
// followed by a cross-worker stage: the last replica to arrive sums the
// bucket into replica 0, then (with `cross`) a communication thread reduces
// it across workers, in bucket order, while backward continues; then every
// replica gets the result.
// Thread-safe: arrive() and wait_all() are called from the replica threads.
class InProcessAllReduce {
 public:
  explicit InProcessAllReduce(const GradBuckets& buckets, CrossReduce cross = {});
  ~InProcessAllReduce();
  // Before the replicas start a step (caller's thread, no replica running).
  // `profiler` (null: off) records each bucket's in-process sum on the
  // replica thread that does it, and its cross-worker reduction on the
  // communication thread (track "all-reduce").
  void begin_step(std::span<ReplicaState* const> states, Profiler* profiler = nullptr);
  // Replica r's gradients for `bucket` are final. The last replica to arrive
  // reduces the bucket and writes the sum into every replica's gradients.
  void arrive(size_t bucket);
  // Blocks until every bucket of this step is reduced. Throws
  // ErrorException when the step was abandoned. `replica`: the caller's
  // index; replica 0's time blocked here counts as exposed.
  void wait_all(int replica);
  // Blocks until `bucket` is reduced (every earlier one is too: buckets are
  // reduced in index order), so that the optimizer can update its variables
  // while later buckets are still being reduced. Throws like wait_all.
  void wait_bucket(size_t bucket, int replica);
  // A replica failed this step: the others stop waiting for its buckets
  // (wait_all throws) until the next begin_step.
  void abandon();
  // The cross-worker stage's first error this step (after wait_all()).
  std::optional<Error> error() const;
  // Seconds the communication thread spent in `cross` this step, and the
  // time replica 0 spent blocked in wait_all / wait_bucket (after its
  // backward): what neither backward nor the optimizer overlapped.
  double cross_seconds() const;
  double exposed_seconds() const;

 private:
  void publish(size_t bucket);  // copies replica 0's sum to the others, counts it reduced
  void comm_loop();
  // Waits (lock held) until done() or the step is abandoned; adds replica
  // 0's blocked time to exposed_seconds_.
  template <class Done>
  void wait_until(std::unique_lock<std::mutex>& lock, int replica, Done done);

  const GradBuckets& buckets_;
  CrossReduce cross_;
  std::span<ReplicaState* const> states_;
  Profiler* profiler_ = nullptr;  // GUARDED_BY(mu_); set by begin_step
  // "bucket 3 (1.00 MiB)" for the profiler.
  std::string bucket_label(size_t bucket) const;
  mutable std::mutex mu_;
  std::condition_variable done_cv_, ready_cv_;
  std::vector<int> arrived_;   // GUARDED_BY(mu_), per bucket
  std::vector<bool> ready_;    // GUARDED_BY(mu_), per bucket: summed locally, waiting for `cross`
  size_t reduced_ = 0;         // GUARDED_BY(mu_)
  std::vector<bool> done_;     // GUARDED_BY(mu_), per bucket: reduced and published
  size_t next_cross_ = 0;      // GUARDED_BY(mu_): the bucket the comm thread reduces next
  bool stop_ = false;          // GUARDED_BY(mu_)
  bool abandoned_ = false;     // GUARDED_BY(mu_)
  std::optional<Error> error_; // GUARDED_BY(mu_)
  double cross_seconds_ = 0, exposed_seconds_ = 0;  // GUARDED_BY(mu_)
  std::thread comm_;           // only with cross_
};

}  // namespace dtrain
