// Gloo collectives over TCP between the CPU worker processes of a cluster,
// bootstrapped through the coordination service's key-value store (Gloo's
// own stores are files or Redis; ours is the service).
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/base/status.hpp"
#include "strategies/coordination.hpp"

namespace dtrain {

class GlooComm {
 public:
  // Builds a full-mesh Gloo context of `size` ranks; this process is `rank`.
  // Binds Gloo's TCP device on bind_host (this task's host from the cluster
  // spec; "" = the hostname). Store keys are prefixed with `prefix` so
  // several contexts can coexist. Every collective fails instead of blocking
  // longer than timeout_secs. Errors are kCluster.
  // `superseded` (elastic training): polled while waiting for a peer's
  // address; when it returns true the wait ends with a kCluster error (a
  // peer was lost while the group formed).
  static Result<std::unique_ptr<GlooComm>> create(CoordinationClient& client, int rank, int size,
                                                  const std::string& bind_host, double timeout_secs,
                                                  const std::string& prefix,
                                                  std::function<bool()> superseded = {});
  ~GlooComm();
  int rank() const;
  int size() const;

  // In-place sum over all ranks; every rank ends with the same bits. Up to
  // 256 KiB gathered (count x size), an all-gather and a sum in tree_sum's
  // grouping (one round of messages for 2 ranks: latency is what a small
  // all-reduce costs); above, the ring all-reduce. Errors (a peer closed its connection, timeout) are kCluster
  // errors; after one, the communicator must not be used again.
  Status all_reduce_sum(float* data, size_t count);
  Status all_reduce_sum(double* data, size_t count);
  // The same sum with the ranks' values grouped as tree_sum groups parts
  // (strategies/tree_sum.hpp): element i is T(0, size) over rank 0's,
  // rank 1's, ... values, whatever count is (the ring's grouping rotates
  // with the element's chunk). The ring's traffic: an all-to-all, then an
  // all-gather.
  Status all_reduce_sum_ordered(float* data, size_t count);
  // The same with rank r's values the sum of parts [bounds[r], bounds[r+1])
  // of a tree over bounds.back() parts (tree_parts' boundaries, each range a
  // node of it): the ranks' values are added in that tree's order, so the
  // result has the bits of the tree over every part. Empty bounds: as above.
  void set_ordered_parts(std::vector<size_t> bounds);
  // Copies root's `bytes` bytes at `data` into every rank's `data`.
  Status broadcast(void* data, size_t bytes, int root);
  Status barrier();

  class Impl;

 private:
  explicit GlooComm(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace dtrain
