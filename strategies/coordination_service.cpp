// The coordination service (gRPC, synchronous server): rendezvous with a
// deadline, heartbeat monitor, failure reports, key-value store, barriers.
// One mutex guards all state; long-polls wait on one condition variable.
#include <fmt/format.h>
#include <grpcpp/grpcpp.h>

#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "strategies/coordination.grpc.pb.h"
#include "strategies/coordination_internal.hpp"
#include "strategies/rpc_guard.hpp"

namespace dtrain {

using namespace coord_internal;

namespace {

// How often an attach stream checks whether its task's connection closed.
constexpr std::chrono::milliseconds kAttachPoll{100};

struct TaskState {
  CoordTask task;
  bool observer = false;
  bool left = false;
  bool dead = false;  // no heartbeat for timeout_secs, or its attach stream closed before it left
  Clock::time_point last_heartbeat;
  int64_t steps_done = 0;  // the last step it reported finished
  int64_t attach = 0;      // which attach stream is its current one (0: none yet)
  bool told = false;       // the cluster's failure went down its attach stream
  std::string incarnation;  // the registered process (RegisterRequest.incarnation)
};

bool is_ps(const CoordTask& t) { return t.type == "ps"; }

// ", after step 110" (the last step the task reported finished), or "" before its first.
std::string after_step(const TaskState& st) {
  return st.steps_done > 0 ? fmt::format(" after step {}", st.steps_done) : std::string();
}

}  // namespace

class CoordinationService::Impl final : public coord::Coordination::Service {
 public:
  explicit Impl(const CoordinationOptions& options)
      : options_(options),
        timeout_(to_duration(options.timeout_secs)),
        poll_cap_(std::min<Clock::duration>(kMaxPoll, to_duration(heartbeat_interval(options)))),
        rendezvous_deadline_(Clock::now() + timeout_) {
    for (const CoordTask& t : options_.training_tasks) training_.emplace(t.id(), t);
    order_ = options_.training_tasks;
    if (options_.elastic_min_workers > 0 && !options_.training_tasks.empty()) {
      kv_[host_key()] = options_.training_tasks.front().id();  // found by tasks that start (again) later
    }
    if (const auto& f = options_.failover) {
      // The group of the lost service goes on: its members register again;
      // the tasks not in it are lost (they join again when they register).
      generation_ = f->generation;
      for (const std::string& id : f->lost) {
        auto it = training_.find(id);
        if (it == training_.end()) continue;
        TaskState& st = tasks_[id];
        st.task = it->second;
        st.dead = true;
      }
    }
  }

  Result<int> listen(const std::string& address) {
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort(address, grpc::InsecureServerCredentials(), &port);
    builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);  // a second service on a used port must fail
    builder.RegisterService(this);
    server_ = builder.BuildAndStart();
    if (!server_ || port == 0) {
      return cluster_error(fmt::format(
          "the coordination service could not listen on {} (the address is in use or not an address of this host)",
          address));
    }
    port_ = port;
    monitor_ = std::thread([this] {
      try {
        monitor();
      } catch (...) {  // the service fails the cluster, naming where, as for a dead task
        const Error e = current_exception_error("coordination service monitor");
        std::lock_guard<std::mutex> lock(mu_);
        fail(e.message);
      }
    });
    return port;
  }

  int port() const { return port_; }

  void stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    if (monitor_.joinable()) monitor_.join();
    if (server_) server_->Shutdown(grpc_time(Clock::now() + std::chrono::milliseconds(200)));
  }

  bool wait_all_left(Clock::time_point deadline) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_until(lock, deadline, [&] {
      for (const auto& [id, st] : tasks_) {
        if (!st.left && !st.dead) return false;
      }
      return true;
    });
  }

  std::vector<std::string> dead_observers() const {
    std::lock_guard<std::mutex> lock(mu_);
    return dead_observers_;
  }

  std::vector<std::string> returned_observers() const {
    std::lock_guard<std::mutex> lock(mu_);
    return returned_observers_;
  }

  std::string failure() const {
    std::lock_guard<std::mutex> lock(mu_);
    return failure_;
  }

  bool wait_failure_told(Clock::time_point deadline) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_until(lock, deadline, [&] {
      for (const auto& [id, st] : tasks_) {
        if (st.attach != 0 && !st.left && !st.dead && !st.told) return false;
      }
      return true;
    });
  }

  grpc::Status Register(grpc::ServerContext*, const coord::RegisterRequest* req, coord::WaitResponse* resp) override {
    return guarded_rpc("coordination service register", [&]() -> grpc::Status {
      CoordTask task = from_proto(req->task());
      std::unique_lock<std::mutex> lock(mu_);
      bool training = training_.count(task.id()) > 0;
      std::string grown;  // a new worker beyond the spec joins (elastic.max_workers)
      if (!req->observer() && !training && task.type == "worker" && options_.elastic_max_workers > 0 &&
          rendezvous_done_ && failure_.empty()) {
        const int64_t alive = alive_workers();
        if (alive >= options_.elastic_max_workers) {
          return {grpc::StatusCode::FAILED_PRECONDITION,
                  fmt::format("{} cannot join: the running group has {} training tasks, strategy.elastic.max_workers",
                              task.label(), alive)};
        }
        training_.emplace(task.id(), task);
        order_.push_back(task);
        training = true;
        grown = fmt::format("{} joined (a worker beyond the cluster spec; up to strategy.elastic.max_workers {})",
                            task.label(), options_.elastic_max_workers);
      }
      if (!req->observer() && !training) {
        std::vector<std::string> ids;
        for (const CoordTask& t : options_.training_tasks) ids.push_back(t.id());
        return {grpc::StatusCode::INVALID_ARGUMENT,
                fmt::format("{} is not one of the training tasks of the cluster ({})", task.id(), join_labels(ids))};
      }
      if (req->observer() && training) {
        return {grpc::StatusCode::INVALID_ARGUMENT,
                fmt::format("{} is a training task and cannot register as an observer", task.id())};
      }
      auto [it, inserted] = tasks_.try_emplace(task.id());
      TaskState& st = it->second;
      if (options_.failover && !inserted && st.dead && !rendezvous_done_) {
        // Lost before the service moved, and started again before the group
        // re-formed here: it joins once the group has (it asks again).
        cv_.wait_for(lock, wait_of(req->wait_ms()),
                     [&] { return stopping_ || !failure_.empty() || rendezvous_complete(); });
        if (stopping_) return shutting_down();
        if (!rendezvous_done_ || !failure_.empty()) {
          resp->set_complete(false);
          resp->set_failure(failure_);
          return grpc::Status::OK;
        }
      }
      // Elastic training: a training task lost earlier that starts again
      // joins; one whose new process registers before the loss of the old
      // one was noticed is lost first.
      const bool elastic = options_.elastic_min_workers > 0 && rendezvous_done_ && failure_.empty();
      if (elastic && !inserted && !st.observer && !st.dead && !st.left && !req->incarnation().empty() &&
          !st.incarnation.empty() && st.incarnation != req->incarnation()) {
        st.dead = true;
        lose(st, fmt::format("{} started again{} before its earlier process was found lost", st.task.label(),
                             after_step(st)));
      }
      // A ps task comes back empty: the group's rank 0 reloads every ps from
      // the latest checkpoint (the membership of its loss told the workers).
      const bool rejoins = elastic && !inserted && !st.observer && st.dead && generation_ > 0 && failure_.empty();
      // An observer (an async parameter_server worker) started again: one
      // whose old process was not found dead yet is dead first.
      if (!inserted && st.observer && !st.dead && !st.left && !req->incarnation().empty() &&
          !st.incarnation.empty() && st.incarnation != req->incarnation()) {
        st.dead = true;
        dead_observers_.push_back(st.task.label());
      }
      if (!inserted && st.observer && st.dead) returned_observers_.push_back(st.task.label());
      if (inserted || (st.observer && (st.left || st.dead)) || rejoins) {  // new, or came back
        st = TaskState{training ? training_.at(task.id()) : task, req->observer(), false, false, Clock::now()};
        st.incarnation = req->incarnation();
        cv_.notify_all();
      }
      if (!grown.empty()) post_membership(grown, &st);
      if (rejoins && !is_ps(st.task)) {
        post_membership(fmt::format("{} joined again (its process started anew)", st.task.label()), &st);
      }
      st.last_heartbeat = Clock::now();
      bool observer = req->observer();
      cv_.wait_for(lock, wait_of(req->wait_ms()),
                   [&] { return stopping_ || observer || !failure_.empty() || rendezvous_complete(); });
      if (stopping_) return shutting_down();
      st.last_heartbeat = Clock::now();  // a task waiting in the rendezvous is alive
      resp->set_complete(observer || rendezvous_complete());
      resp->set_failure(failure_);
      for (const std::string& label : missing([&](const std::string& id) { return tasks_.count(id) > 0; })) {
        resp->add_missing(label);
      }
      return grpc::Status::OK;
    });
  }

  grpc::Status Heartbeat(grpc::ServerContext*, const coord::HeartbeatRequest* req,
                         coord::HeartbeatResponse* resp) override {
    return guarded_rpc("coordination service heartbeat", [&]() -> grpc::Status {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = tasks_.find(from_proto(req->task()).id());
      if (it != tasks_.end() && !it->second.left) {
        it->second.last_heartbeat = Clock::now();
        it->second.steps_done = std::max(it->second.steps_done, req->steps_done());
      }
      resp->set_failure(failure_);
      return grpc::Status::OK;
    });
  }

  grpc::Status ReportError(grpc::ServerContext*, const coord::ReportErrorRequest* req, coord::Empty*) override {
    return guarded_rpc("coordination service reporterror", [&]() -> grpc::Status {
      CoordTask task = from_proto(req->task());
      std::lock_guard<std::mutex> lock(mu_);
      auto it = tasks_.find(task.id());
      const CoordTask& who = it != tasks_.end() ? it->second.task : task;
      fail(fmt::format("{} failed: {}", who.label(), req->message()));
      return grpc::Status::OK;
    });
  }

  grpc::Status Set(grpc::ServerContext*, const coord::SetRequest* req, coord::Empty*) override {
    return guarded_rpc("coordination service set", [&]() -> grpc::Status {
      std::lock_guard<std::mutex> lock(mu_);
      kv_[req->key()] = req->value();
      cv_.notify_all();
      return grpc::Status::OK;
    });
  }

  grpc::Status Get(grpc::ServerContext*, const coord::GetRequest* req, coord::GetResponse* resp) override {
    return guarded_rpc("coordination service get", [&]() -> grpc::Status {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait_for(lock, wait_of(req->wait_ms()),
                   [&] { return stopping_ || !failure_.empty() || kv_.count(req->key()) > 0; });
      if (stopping_) return shutting_down();
      auto it = kv_.find(req->key());
      if (it != kv_.end()) {
        resp->set_found(true);
        resp->set_value(it->second);
      }
      resp->set_failure(failure_);
      return grpc::Status::OK;
    });
  }

  grpc::Status Barrier(grpc::ServerContext*, const coord::BarrierRequest* req, coord::WaitResponse* resp) override {
    return guarded_rpc("coordination service barrier", [&]() -> grpc::Status {
      std::unique_lock<std::mutex> lock(mu_);
      std::set<std::string>& arrived = barriers_[req->name()];
      if (arrived.insert(from_proto(req->task()).id()).second) cv_.notify_all();
      auto in_barrier = [&](const std::string& id) { return arrived.count(id) > 0; };
      cv_.wait_for(lock, wait_of(req->wait_ms()),
                   [&] { return stopping_ || !failure_.empty() || missing(in_barrier).empty(); });
      if (stopping_) return shutting_down();
      std::vector<std::string> absent = missing(in_barrier);
      resp->set_complete(absent.empty());
      resp->set_failure(failure_);
      for (const std::string& label : absent) resp->add_missing(label);
      return grpc::Status::OK;
    });
  }

  grpc::Status Leave(grpc::ServerContext*, const coord::LeaveRequest* req, coord::Empty*) override {
    return guarded_rpc("coordination service leave", [&]() -> grpc::Status {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = tasks_.find(from_proto(req->task()).id());
      if (it != tasks_.end()) {
        it->second.left = true;
        cv_.notify_all();
      }
      return grpc::Status::OK;
    });
  }

  grpc::Status Agree(grpc::ServerContext*, const coord::AgreeRequest* req, coord::AgreeResponse* resp) override {
    return guarded_rpc("coordination service agree", [&]() -> grpc::Status {
      const std::string id = from_proto(req->task()).id();
      std::unique_lock<std::mutex> lock(mu_);
      Agreement& a = agreements_[req->name()];
      if (a.arrived.insert(id).second) cv_.notify_all();
      a.any = a.any || req->flag();
      const size_t parties = static_cast<size_t>(std::max<int64_t>(req->parties(), 1));
      // A membership the caller does not know yet (elastic training)
      // answers at once: the caller may give the agreement up.
      cv_.wait_for(lock, wait_of(req->wait_ms()), [&] {
        return stopping_ || !failure_.empty() || a.arrived.size() >= parties || generation_ > req->generation();
      });
      if (stopping_) return shutting_down();
      resp->set_failure(failure_);
      resp->set_arrived(static_cast<int64_t>(a.arrived.size()));
      if (a.arrived.size() >= parties) {
        resp->set_complete(true);
        resp->set_any(a.any);
        // Forgotten once every party has its answer (a retry after that is not expected).
        if (a.answered.insert(id).second && a.answered.size() >= parties) agreements_.erase(req->name());
      }
      return grpc::Status::OK;
    });
  }

  // Held open while the task lives. A process that ends (exit, kill -9, a
  // crash) closes its connection, which cancels this call: unless the task
  // left first, it is declared dead at once (a training task fails the
  // cluster). The cluster's failure is written down the stream as soon as
  // it is known. Polls the cancellation every 100 ms.
  grpc::Status Attach(grpc::ServerContext* ctx, const coord::AttachRequest* req,
                      grpc::ServerWriter<coord::AttachEvent>* writer) override {
    return guarded_rpc("coordination service attach", [&]() -> grpc::Status {
      const std::string id = from_proto(req->task()).id();
      std::unique_lock<std::mutex> lock(mu_);
      auto it = tasks_.find(id);
      if (it == tasks_.end()) {
        return {grpc::StatusCode::FAILED_PRECONDITION, fmt::format("{} attached before registering", id)};
      }
      TaskState& st = it->second;  // std::map: stable while the service lives
      const int64_t mine = ++attach_count_;
      st.attach = mine;
      st.told = false;
      int64_t pushed = 0;  // the membership generation this stream has told
      while (true) {
        cv_.wait_for(lock, kAttachPoll, [&] {
          return stopping_ || !failure_.empty() || st.left || st.dead || st.attach != mine || generation_ > pushed;
        });
        if (stopping_) return shutting_down();
        if (st.attach != mine || st.left) return grpc::Status::OK;
        if (failure_.empty() && !st.dead && generation_ > pushed) {
          pushed = generation_;
          coord::AttachEvent event;
          event.set_generation(pushed);
          lock.unlock();
          writer->Write(event);
          lock.lock();
          continue;
        }
        if (!failure_.empty()) {
          coord::AttachEvent event;
          event.set_failure(failure_);
          lock.unlock();
          writer->Write(event);
          lock.lock();
          if (st.attach == mine) st.told = true;
          cv_.notify_all();
          return grpc::Status::OK;
        }
        if (st.dead) return grpc::Status::OK;
        if (ctx->IsCancelled()) {
          st.dead = true;
          cv_.notify_all();
          if (st.observer) {
            dead_observers_.push_back(st.task.label());
          } else {
            lose(st, fmt::format("{} ended without leaving the cluster{} (the process exited or was killed: its "
                                 "connection to the coordination service closed)",
                                 st.task.label(), after_step(st)));
          }
          return grpc::Status::CANCELLED;
        }
      }
    });
  }

 private:
  static grpc::Status shutting_down() {
    return {grpc::StatusCode::UNAVAILABLE, "the coordination service is shutting down"};
  }

  Clock::duration wait_of(int64_t wait_ms) const {
    return std::min<Clock::duration>(std::chrono::milliseconds(std::max<int64_t>(wait_ms, 0)), poll_cap_);
  }

  // Labels of the training tasks for which present(id) is false. REQUIRES: mu_ held.
  template <class Pred>
  std::vector<std::string> missing(Pred present) const {
    std::vector<std::string> out;
    for (const CoordTask& t : order_) {
      if (generation_ > 0 || options_.failover) {  // elastic: a lost task is no longer waited for
        auto it = tasks_.find(t.id());
        if (it != tasks_.end() && it->second.dead) continue;
      }
      if (!present(t.id())) out.push_back(t.label());
    }
    return out;
  }

  // REQUIRES: mu_ held.
  bool rendezvous_complete() {
    if (!rendezvous_done_) {
      rendezvous_done_ = missing([&](const std::string& id) { return tasks_.count(id) > 0; }).empty();
      // A service that took over: the group re-formed here, in a new membership.
      if (rendezvous_done_ && options_.failover && failure_.empty()) post_membership(options_.failover->why, nullptr);
    }
    return rendezvous_done_;
  }

  // Records the cluster's first failure and wakes every long-poll. REQUIRES: mu_ held.
  void fail(std::string message) {
    if (failure_.empty()) failure_ = std::move(message);
    cv_.notify_all();
  }

  // A training task died (st.dead is set): the cluster fails, unless the
  // job is elastic, the rendezvous is over, the task is not the service's
  // host and enough training tasks remain: then the next membership
  // generation is posted (membership_key) and training goes on over the
  // rest. REQUIRES: mu_ held.
  void lose(const TaskState& st, const std::string& why) {
    const int64_t min_workers = options_.elastic_min_workers;
    if (min_workers <= 0 || !rendezvous_done_ || !failure_.empty()) {
      fail(why);
      return;
    }
    // A ps task lost: training pauses until it is started again (the
    // workers' regroup waits for it, and reloads every ps from the latest
    // checkpoint).
    std::vector<std::string> alive;
    size_t workers = 0;
    for (const CoordTask& t : order_) {
      if (is_ps(t)) continue;
      ++workers;
      auto it = tasks_.find(t.id());
      if (it != tasks_.end() && !it->second.dead && !it->second.observer) alive.push_back(t.id());
    }
    const bool host = !options_.training_tasks.empty() && st.task.id() == options_.training_tasks.front().id();
    if (host || static_cast<int64_t>(alive.size()) < min_workers) {
      fail(host ? why
                : fmt::format("{}; {} of the {} training tasks remain, fewer than strategy.elastic.min_workers {}",
                              why, alive.size(), workers, min_workers));
      return;
    }
    post_membership(why, nullptr);
  }

  // Posts the next membership: the training tasks alive, in rank order;
  // `joined` (if any) is told the generation it joins with. REQUIRES: mu_ held.
  void post_membership(const std::string& why, const TaskState* joined) {
    std::string value = why;
    for (const CoordTask& t : order_) {
      auto it = tasks_.find(t.id());
      if (!is_ps(t) && it != tasks_.end() && !it->second.dead && !it->second.observer) {
        value += "\n" + t.id();
        if (!t.address.empty()) value += "\t" + t.address;
      }
    }
    kv_[membership_key(++generation_)] = value;
    if (joined != nullptr) kv_[rejoin_key(joined->task.id())] = std::to_string(generation_);
    cv_.notify_all();
  }

  // Training tasks (not ps) registered and alive. REQUIRES: mu_ held.
  int64_t alive_workers() const {
    int64_t n = 0;
    for (const CoordTask& t : order_) {
      auto it = tasks_.find(t.id());
      if (!is_ps(t) && it != tasks_.end() && !it->second.dead && !it->second.observer) ++n;
    }
    return n;
  }

  // Declares the rendezvous failed at its deadline and tasks dead when their
  // heartbeats stop; observers' death wakes wait_all_left but fails nothing.
  void monitor() {
    std::unique_lock<std::mutex> lock(mu_);
    auto tick = std::clamp<Clock::duration>(poll_cap_ / 4, std::chrono::milliseconds(20),
                                            std::chrono::milliseconds(250));
    while (!cv_.wait_for(lock, tick, [&] { return stopping_; })) {
      maybe_throw_for_test("coordination service monitor");
      Clock::time_point now = Clock::now();
      if (!rendezvous_complete() && now >= rendezvous_deadline_) {
        auto absent = missing([&](const std::string& id) { return tasks_.count(id) > 0; });
        fail(fmt::format("rendezvous: {} did not arrive within {} s", join_labels(absent),
                         format_secs(options_.timeout_secs)));
      }
      for (auto& [id, st] : tasks_) {
        if (st.left || st.dead || now - st.last_heartbeat <= timeout_) continue;
        st.dead = true;
        cv_.notify_all();
        if (st.observer) dead_observers_.push_back(st.task.label());
        if (!st.observer) {
          const std::string since = st.steps_done > 0 ? fmt::format(" since step {}", st.steps_done) : "";
          lose(st, fmt::format("{} sent no heartbeat for {} s{} (the process died or hung)", st.task.label(),
                               format_secs(options_.timeout_secs), since));
        }
      }
    }
  }

  const CoordinationOptions options_;
  const Clock::duration timeout_;
  const Clock::duration poll_cap_;
  const Clock::time_point rendezvous_deadline_;
  std::map<std::string, CoordTask> training_;  // GUARDED_BY(mu_) after construction, by id(); grows by max_workers
  std::vector<CoordTask> order_;               // GUARDED_BY(mu_), the training tasks in rank order

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, TaskState> tasks_;                  // GUARDED_BY(mu_), registered tasks by id()
  std::vector<std::string> dead_observers_;                 // GUARDED_BY(mu_), labels, in order
  std::vector<std::string> returned_observers_;             // GUARDED_BY(mu_), dead ones registered again, in order
  std::map<std::string, std::string> kv_;                   // GUARDED_BY(mu_)
  std::map<std::string, std::set<std::string>> barriers_;   // GUARDED_BY(mu_), name -> ids arrived
  struct Agreement {
    std::set<std::string> arrived, answered;  // task ids
    bool any = false;
  };
  std::map<std::string, Agreement> agreements_;             // GUARDED_BY(mu_), in progress, by name
  std::string failure_;                                     // GUARDED_BY(mu_)
  bool rendezvous_done_ = false;                            // GUARDED_BY(mu_)
  int64_t generation_ = 0;                                  // GUARDED_BY(mu_), elastic memberships posted
  int64_t attach_count_ = 0;                                // GUARDED_BY(mu_), attach streams opened
  bool stopping_ = false;                                   // GUARDED_BY(mu_)

  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
  std::thread monitor_;
};

Result<std::unique_ptr<CoordinationService>> CoordinationService::start(const std::string& listen_address,
                                                                        const CoordinationOptions& options) {
  auto impl = std::make_unique<Impl>(options);
  Result<int> port = impl->listen(listen_address);
  if (!port.ok()) return port.error();
  return std::unique_ptr<CoordinationService>(new CoordinationService(std::move(impl)));
}

std::string membership_key(int64_t generation) { return fmt::format("elastic/membership/{}", generation); }
std::string rejoin_key(const std::string& id) { return "elastic/rejoin/" + id; }
std::string host_key() { return "elastic/host"; }

CoordinationService::CoordinationService(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

CoordinationService::~CoordinationService() { impl_->stop(); }

int CoordinationService::port() const { return impl_->port(); }

bool CoordinationService::wait_all_left(std::chrono::steady_clock::time_point deadline) {
  return impl_->wait_all_left(deadline);
}

std::string CoordinationService::failure() const { return impl_->failure(); }

bool CoordinationService::wait_failure_told(std::chrono::steady_clock::time_point deadline) {
  return impl_->wait_failure_told(deadline);
}

std::vector<std::string> CoordinationService::dead_observers() const { return impl_->dead_observers(); }
std::vector<std::string> CoordinationService::returned_observers() const { return impl_->returned_observers(); }

}  // namespace dtrain
