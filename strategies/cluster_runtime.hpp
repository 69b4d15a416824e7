// A process's membership of a multi-task cluster: the chief (or worker 0)
// hosts the coordination service on its cluster address; every training task
// connects and waits for the rendezvous; an evaluator joins as an observer.
// Strategies that span processes (collective, parameter_server) build their
// communicators from it.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "engine/cluster/cluster.hpp"
#include "engine/base/status.hpp"
#include "strategies/coordination.hpp"

namespace dtrain {

class ClusterRuntime {
 public:
  // Joins the cluster `rc` describes (more than one task, or any task that is
  // not a plain local process). Blocks until every training task arrived or
  // cluster.timeout_secs passed (kCluster error naming the missing tasks).
  // parameter_server: the ps tasks are part of the rendezvous and are
  // monitored like training tasks; with workers_may_die (async mode) the
  // workers other than the chief join as observers, so that one dying does
  // not stop the others.
  struct JoinOptions {
    bool with_ps = false;
    bool workers_may_die = false;
    // strategy.elastic.min_workers (0: not elastic); see CoordinationOptions.
    int64_t elastic_min_workers = 0;
    // Elastic collective training: the coordination service's host may be
    // lost too. The lowest surviving member then hosts a new service on its
    // own cluster address, the others connect to it, and it takes over the
    // chief's duties (is_chief()); a task that starts (again) later finds
    // the service where it is.
    bool failover = false;
    // strategy.elastic.max_workers (0: none beyond the spec); see CoordinationOptions.
    int64_t elastic_max_workers = 0;
  };
  static Result<std::unique_ptr<ClusterRuntime>> join(const ResolvedCluster& rc, const JoinOptions& options);
  ~ClusterRuntime();

  const ResolvedCluster& resolved() const { return rc_; }
  // Training tasks in rank order: the chief (if any), then workers by index.
  const std::vector<CoordTask>& training_tasks() const { return training_; }
  bool is_training_task() const { return rank_ >= 0; }
  bool is_ps() const { return rc_.task.type == "ps"; }
  int rank() const { return rank_; }  // -1 for an evaluator
  int size() const { return static_cast<int>(training_.size()); }
  // Whether this task holds the chief's duties: rank 0 of the group (at the
  // start the first training task; after the service's host was lost, the
  // task that took it over). A task that joins running training does not.
  bool is_chief() const { return chief_; }
  double timeout_secs() const { return rc_.timeout_secs; }
  // The host of this task's address (where Gloo binds); "" if it has none.
  std::string bind_host() const;
  CoordinationClient& client() { return *client_; }
  // The service, on the task that hosts it (else null).
  const CoordinationService* service() const { return service_.get(); }
  // Ends this task's part cleanly: leaves; on the service host, waits (at
  // most timeout_secs) for every other task to leave before stopping it.
  void finish();
  // After a communication error (a peer closed its connection): waits for
  // the coordination service to name the failed task (the failure handler
  // then ends the process with exit code 4); if none is named within
  // timeout_secs plus three heartbeats and 3 s, prints `e` and exits with code 4.
  [[noreturn]] void fail_after_comm_error(const Error& e);

  // Elastic training: the training tasks after one or more were lost.
  struct Membership {
    int64_t generation = 0;
    std::vector<std::string> reasons;  // one per task lost since the last membership taken
    std::vector<CoordTask> tasks;      // the remaining training tasks, in rank order
    int rank = -1;                     // this task's place among them
  };
  bool elastic() const { return elastic_min_workers_ > 0; }
  // Waits (at most timeout_secs plus three heartbeats and 3 s) for the
  // service to post a membership newer than the last one taken, then takes
  // the newest posted so far. Errors are kCluster (none posted: the
  // communication error had another cause).
  Result<Membership> next_membership();
  // Whether a membership newer than the last one taken has been posted
  // (no call to the service: the newest generation comes down the attach
  // stream).
  bool membership_superseded() const;
  // This task was lost earlier and started again (elastic): it joins the
  // running training at the membership that takes it back (next_membership).
  bool rejoining() const { return rejoining_; }

 private:
  ClusterRuntime() = default;
  // The service's host was lost (JoinOptions::failover): the first other
  // member hosts a new one if that is this task, and this task's client
  // connects to it. The new service posts the next membership.
  Status fail_over();
  // Sets the client's failure handler: on the service's host, the failure
  // reaches every other task before the process ends; with failover, the
  // service's end marks the host lost instead of ending the process.
  void watch_client();
  CoordinationOptions options_;
  bool failover_ = false;
  bool chief_ = false;
  std::atomic<bool> host_lost_{false};
  std::vector<std::unique_ptr<CoordinationClient>> retired_;  // clients of lost services (threads may still read them)
  ResolvedCluster rc_;
  std::vector<CoordTask> training_;
  int rank_ = -1;
  std::unique_ptr<CoordinationService> service_;
  std::unique_ptr<CoordinationClient> client_;
  int64_t elastic_min_workers_ = 0;
  int64_t generation_ = 0;            // the last membership generation taken
  std::vector<std::string> members_;  // ids of the current training tasks, in rank order
  bool rejoining_ = false;
};

// Host part of "host:port" ("" when there is no colon).
std::string address_host(const std::string& address);

}  // namespace dtrain
