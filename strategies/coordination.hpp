// The coordination service of a multi-worker cluster (gRPC, hosted by the
// chief, or worker 0 when there is no chief): rendezvous of every training
// task with a deadline, a key-value store (Gloo's rendezvous store and NCCL's
// unique id go through it), barriers, and heartbeats. When a training task
// dies, hangs or never arrives, every other task learns it within
// timeout_secs, with a message naming the task and its address; nothing
// waits forever. A task's process that ends without leaving (exit, kill -9,
// a crash) closes its connection to the service: the others learn it within
// a fraction of a second, naming it and the last step it reported. A task
// that hangs with its connection open, or a host that vanishes, is found by
// its missing heartbeats after timeout_secs.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/base/status.hpp"

namespace dtrain {

// One task of the cluster as the service knows it.
struct CoordTask {
  std::string type;     // chief | worker | evaluator | ps
  int64_t index = 0;
  std::string address;  // host:port from the cluster spec ("" if unlisted, e.g. an evaluator)

  std::string id() const;     // "worker 1"
  std::string label() const;  // "worker 1 (127.0.0.1:2223)", or id() without an address
};

struct CoordinationOptions {
  // Training tasks that must all register (rendezvous) and keep sending
  // heartbeats. Other tasks (evaluator, ps) may register as observers: they
  // receive failures, and the service waits for them to leave before it
  // stops, but their death does not fail the training cluster.
  std::vector<CoordTask> training_tasks;
  double timeout_secs = 60;  // rendezvous deadline, heartbeat timeout, barrier and get() deadline
  // Interval between heartbeats; 0 means timeout_secs / 10 clamped to [0.2, 5] s.
  double heartbeat_secs = 0;
  // Elastic training (strategy.elastic.min_workers > 0): after the
  // rendezvous, a training task other than the first (the service's host)
  // that dies does not fail the cluster while at least this many training
  // tasks remain: the service posts the new membership instead (see
  // membership_key()). 0: any training task's death fails the cluster.
  int64_t elastic_min_workers = 0;
  // Elastic training: a worker not among training_tasks that registers after
  // the rendezvous joins (in a new membership, after the others) while fewer
  // than this many training tasks are alive. 0: none.
  int64_t elastic_max_workers = 0;
  // Elastic collective training: a service started by a survivor after the
  // service's host was lost (ClusterRuntime takes over the host's duties).
  // training_tasks lists the new host first (rank 0, the chief from now
  // on), then every other training task; `lost` are those not in the group
  // (they join again when they register). Once every other member has
  // registered, the service posts membership generation + 1 with `why`.
  struct Failover {
    int64_t generation = 0;         // the last membership generation of the lost service
    std::vector<std::string> lost;  // id()s of the training tasks not in the group
    std::string why;                // the first line of the membership it posts
  };
  std::optional<Failover> failover;
};

// Elastic training: the key-value entry in which the service posts
// membership generation `generation` (1, 2, ...: one per lost task). Its
// value is the reason on the first line (the lost task, how, after which
// step), then the id() of every remaining training task in rank order, one
// per line, each followed by a tab and its address when it has one.
std::string membership_key(int64_t generation);
// The key in which the service posts the generation that a training task
// lost earlier joins again with (it registered again): `id` is its id().
std::string rejoin_key(const std::string& id);
// The key in which a service of an elastic job names the task hosting it (its id()).
std::string host_key();

// Elastic training: whether a coordination service answers at `address`
// within `timeout`; its host's id() when it does (a refused connection
// answers at once).
std::optional<std::string> coordination_host_at(const std::string& address, std::chrono::milliseconds timeout);

// The service, run inside the chief's process.
class CoordinationService {
 public:
  // Listens on listen_address ("host:port"; port 0 picks a free port). Errors
  // (address in use, bad address) are kCluster errors naming the address.
  static Result<std::unique_ptr<CoordinationService>> start(const std::string& listen_address,
                                                            const CoordinationOptions& options);
  // Stops serving (in-flight calls end with UNAVAILABLE).
  ~CoordinationService();
  // The port actually bound.
  int port() const;
  // Blocks until every task that registered (training and observers) has
  // left or been declared dead, or until `deadline` passes. Returns false on
  // deadline.
  bool wait_all_left(std::chrono::steady_clock::time_point deadline);
  // "" while healthy; else the first failure, e.g. "worker 1 (127.0.0.1:2223)
  // sent no heartbeat for 60 s (the process died or hung)".
  std::string failure() const;
  // After a failure: blocks until it went down the attach stream of every
  // task still connected (those that left or died need not hear it), or
  // until `deadline`. Returns false on deadline.
  bool wait_failure_told(std::chrono::steady_clock::time_point deadline);
  // Labels of the observers declared dead so far (ended without leaving, or
  // no heartbeat for timeout_secs), in the order they were declared.
  std::vector<std::string> dead_observers() const;
  // Labels of the dead observers that registered again, in that order.
  std::vector<std::string> returned_observers() const;

  class Impl;

 private:
  explicit CoordinationService(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// A task's connection to the service.
class CoordinationClient {
 public:
  // Connects to the service at service_address (retrying until it answers)
  // and registers `self`. A training task then blocks until every training
  // task has registered (the rendezvous); an observer returns once
  // registered. Every wait is bounded by options.timeout_secs. Errors are
  // kCluster and name who is missing, e.g.
  //   "rendezvous: worker 2 (127.0.0.1:2224) did not arrive within 60 s"
  //   "the coordination service at 127.0.0.1:2222 (chief 0) did not answer within 60 s: <grpc message>"
  // service_label names the host task in messages ("chief 0 (127.0.0.1:2222)").
  // After success a background thread sends heartbeats, and another holds
  // the attach stream on which the service pushes the cluster's failure (and
  // which tells the service at once when this process ends).
  static Result<std::unique_ptr<CoordinationClient>> connect(const std::string& service_address,
                                                             const std::string& service_label, const CoordTask& self,
                                                             bool observer, const CoordinationOptions& options);
  // Closes the connection without leaving: the service declares this task
  // dead at once, as when its process ends.
  ~CoordinationClient();

  // Called once, from the heartbeat or the attach thread, when the cluster has failed: the
  // service reported a failure (another task dead, missing, or reported an
  // error), the service's connection closed (its process ended), or the
  // service was unreachable for timeout_secs. The message names
  // the task. When no handler is set the default prints
  // "dtrain: <message>" to stderr and calls _exit(4) (ExitCode::kCluster):
  // the main thread may be blocked inside a collective that will never end.
  void on_failure(std::function<void(const Error&)> handler);
  // The failure seen so far (nullopt while healthy).
  std::optional<Error> failure() const;
  // Whether that failure is the service's own end: its connection closed,
  // or it did not answer heartbeats for timeout_secs.
  bool service_lost() const;

  // Key-value store shared by every task of the cluster.
  Status set(const std::string& key, const std::string& value);
  // Waits until `key` is set (at most timeout_secs, or `timeout` if given).
  Result<std::string> get(const std::string& key, std::optional<std::chrono::milliseconds> timeout = std::nullopt);
  // Blocks until every training task has entered barrier `name` (each name
  // used once), or fails naming the tasks that did not arrive in timeout_secs.
  Status barrier(const std::string& name);
  // Blocks until `parties` tasks have entered agreement `name` (each name
  // used once), and returns whether any of them gave `flag` true. Fails like
  // barrier() when a party does not arrive within timeout_secs. Elastic
  // training: with `abandon`, gives up (kCluster) once abandon() is true
  // while the agreement is incomplete (a membership generation posted wakes
  // the wait).
  Result<bool> agree(const std::string& name, bool flag, int64_t parties,
                     const std::function<bool()>& abandon = {});
  // Tells the service this task failed (the others stop with this message).
  void report_error(const std::string& message);
  // This task ends cleanly: it will send no more heartbeats and must not be
  // declared dead. Idempotent.
  void leave();
  // The last training step this task finished, sent with the next heartbeat
  // (at most 1 s later) so that a failure can name it.
  void set_steps_done(int64_t step);
  // Elastic training: the newest membership generation the service has
  // pushed down the attach stream (0: none), within milliseconds of its post.
  int64_t membership_generation() const;
  // Tests only: this task hangs. Its heartbeats stop; its connection stays open.
  void hang_for_test();

  class Impl;

 private:
  explicit CoordinationClient(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace dtrain
