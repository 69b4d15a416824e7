// Joining a multi-task cluster through the coordination service.
#include "strategies/cluster_runtime.hpp"

#include "strategies/rpc_time.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>
#include <thread>

namespace dtrain {

std::string address_host(const std::string& address) {
  const size_t colon = address.rfind(':');
  return colon == std::string::npos ? "" : address.substr(0, colon);
}

namespace {

std::string address_port(const std::string& address) {
  const size_t colon = address.rfind(':');
  return colon == std::string::npos ? "" : address.substr(colon + 1);
}

std::chrono::milliseconds to_ms(double secs) { return std::chrono::milliseconds(static_cast<int64_t>(secs * 1000)); }

// The index of the training task whose address answers as the coordination
// service's host (the one the service names), asking them in rank order
// (not `self`) until `within` has passed.
std::optional<size_t> find_running_service(const std::vector<CoordTask>& tasks, const std::string& self,
                                           std::chrono::milliseconds within) {
  const auto deadline = std::chrono::steady_clock::now() + within;
  for (;;) {
    for (size_t i = 0; i < tasks.size(); ++i) {
      if (tasks[i].id() == self) continue;
      std::optional<std::string> host = coordination_host_at(tasks[i].address, std::chrono::milliseconds(300));
      if (!host) continue;
      for (size_t j = 0; j < tasks.size(); ++j) {
        if (tasks[j].id() == *host && j == i) return j;
      }
    }
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

}  // namespace

Result<std::unique_ptr<ClusterRuntime>> ClusterRuntime::join(const ResolvedCluster& rc, const JoinOptions& join) {
  std::unique_ptr<ClusterRuntime> rt(new ClusterRuntime());
  rt->rc_ = rc;
  for (const char* type : {"chief", "worker"}) {
    auto it = rc.cluster.tasks.find(type);
    if (it == rc.cluster.tasks.end()) continue;
    for (size_t i = 0; i < it->second.size(); ++i) {
      rt->training_.push_back({type, static_cast<int64_t>(i), it->second[i]});
      if (rc.task.type == type && rc.task.index == static_cast<int64_t>(i)) {
        rt->rank_ = static_cast<int>(rt->training_.size()) - 1;
      }
    }
  }
  if (rt->training_.empty()) {
    return config_error(fmt::format("cluster from {}: no chief or worker task to train", rc.source));
  }
  CoordinationOptions options;
  // Monitored tasks: every training task (only the chief when workers may
  // die), and the ps tasks.
  for (size_t r = 0; r < rt->training_.size(); ++r) {
    if (r == 0 || !join.workers_may_die) options.training_tasks.push_back(rt->training_[r]);
  }
  if (join.with_ps) {
    if (auto it = rc.cluster.tasks.find("ps"); it != rc.cluster.tasks.end()) {
      for (size_t i = 0; i < it->second.size(); ++i) options.training_tasks.push_back({"ps", static_cast<int64_t>(i), it->second[i]});
    }
  }
  options.timeout_secs = rc.timeout_secs;
  options.elastic_min_workers = join.elastic_min_workers;
  options.elastic_max_workers = join.elastic_max_workers;
  rt->elastic_min_workers_ = join.elastic_min_workers;
  rt->failover_ = join.failover && join.elastic_min_workers > 0;
  rt->options_ = options;
  for (const CoordTask& t : rt->training_) rt->members_.push_back(t.id());
  CoordTask self{rc.task.type, rc.task.index, rc.address};
  const CoordTask* host = &rt->training_[0];
  if (rt->failover_) {
    // The service may have moved to another task (its first host was lost
    // and this task starts again, or starts late): ask every training task's
    // address for it. The first host waits a little before it starts its own.
    if (auto found = find_running_service(rt->training_, self.id(), rt->rank_ == 0 ? std::chrono::milliseconds(1000)
                                                                                   : to_ms(rc.timeout_secs))) {
      host = &rt->training_[*found];
    }
  }
  if (rt->rank_ == 0 && host == &rt->training_[0]) {
    // Listen on every interface at the chief's port: its cluster address may
    // name an interface by a host name this process cannot bind as given.
    auto service = CoordinationService::start("0.0.0.0:" + address_port(host->address), options);
    if (!service) return service.error();
    rt->service_ = std::move(*service);
  }
  const bool monitored = (rt->is_training_task() && (rt->rank_ == 0 || !join.workers_may_die)) ||
                         (join.with_ps && rc.task.type == "ps");
  auto client = CoordinationClient::connect(host->address, host->label(), self, !monitored, options);
  if (!client) {
    if (rt->service_) {
      // The service ends with this process: keep it up for two heartbeats so
      // the other tasks' calls get its verdict (who is missing) first.
      const double heartbeat = rpc_time::default_heartbeat_secs(rc.timeout_secs);
      std::this_thread::sleep_for(std::chrono::milliseconds(static_cast<int64_t>((2 * heartbeat + 0.5) * 1000)));
    }
    return client.error();
  }
  rt->client_ = std::move(*client);
  if (rt->elastic_min_workers_ > 0 && rt->is_training_task()) {
    // Started again after it was lost: the service took it back in a new
    // membership (a first start finds no such key; the wait lets the call
    // reach the service and answer).
    if (auto g = rt->client_->get(rejoin_key(self.id()), std::chrono::milliseconds(300)); g.ok()) {
      rt->generation_ = std::stoll(*g) - 1;
      rt->rejoining_ = true;
    }
  }
  rt->chief_ = rt->rank_ == 0 && !rt->rejoining_ && (!rt->failover_ || rt->service_ != nullptr);
  rt->watch_client();
  return rt;
}

void ClusterRuntime::watch_client() {
  if (service_) {
    // The service lives in this process: before it ends with the process,
    // let the failure go down every other task's attach stream (at most a
    // heartbeat or two), or they would only see the service vanish.
    const double heartbeat = rpc_time::default_heartbeat_secs(rc_.timeout_secs);
    CoordinationService* service = service_.get();
    client_->on_failure([heartbeat, service](const Error& e) {
      std::fprintf(stderr, "dtrain: %s\n", e.message.c_str());
      std::fflush(stderr);
      service->wait_failure_told(std::chrono::steady_clock::now() +
                                 std::chrono::milliseconds(static_cast<int64_t>((2 * heartbeat + 0.5) * 1000)));
      _exit(static_cast<int>(ExitCode::kCluster));
    });
  } else if (failover_ && is_training_task()) {
    // The service's end is its host's loss: the group goes on with a new
    // one (next_membership). Any other failure ends the process.
    CoordinationClient* client = client_.get();
    client_->on_failure([this, client](const Error& e) {
      if (client->service_lost()) {
        host_lost_.store(true);
        return;
      }
      std::fprintf(stderr, "dtrain: %s\n", e.message.c_str());
      std::fflush(stderr);
      _exit(static_cast<int>(ExitCode::kCluster));
    });
  }
}

ClusterRuntime::~ClusterRuntime() = default;

std::string ClusterRuntime::bind_host() const { return address_host(rc_.address); }

void ClusterRuntime::finish() {
  client_->leave();
  if (service_) {
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(static_cast<int64_t>(rc_.timeout_secs * 1000));
    service_->wait_all_left(deadline);
  }
}

void ClusterRuntime::fail_after_comm_error(const Error& e) {
  // The service names a dead task timeout_secs after its last heartbeat; a
  // heartbeat interval is timeout_secs / 10 clamped to [0.2, 5] s.
  const double heartbeat = rpc_time::default_heartbeat_secs(rc_.timeout_secs);
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(static_cast<int64_t>((rc_.timeout_secs + 3 * heartbeat + 3) * 1000));
  while (std::chrono::steady_clock::now() < deadline && !host_lost_.load()) {
    // The failure handler (set by the caller, or the default) ends the process.
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  std::fprintf(stderr, "dtrain: %s\n", e.message.c_str());
  std::fflush(stderr);
  _exit(static_cast<int>(ExitCode::kCluster));
}

}  // namespace dtrain

namespace dtrain {

bool ClusterRuntime::membership_superseded() const {
  return host_lost_.load() || client_->membership_generation() > generation_;
}

Status ClusterRuntime::fail_over() {
  const std::string self = CoordTask{rc_.task.type, rc_.task.index, rc_.address}.id();
  auto task_of = [&](const std::string& id) -> const CoordTask* {
    for (const CoordTask& t : training_) {
      if (t.id() == id) return &t;
    }
    return nullptr;
  };
  // The host is the group's rank 0; the next member takes its place.
  const std::string lost = members_.empty() ? training_[0].id() : members_[0];
  std::vector<std::string> group;
  for (const std::string& id : members_) {
    if (id != lost) group.push_back(id);
  }
  const CoordTask* was = task_of(lost);
  const CoordTask* next = group.empty() ? nullptr : task_of(group[0]);
  const std::string lost_label = was != nullptr ? was->label() : lost;
  if (next == nullptr) {
    return cluster_error(fmt::format("{}, the coordination service's host, was lost and no other training task "
                                     "remains",
                                     lost_label));
  }
  CoordinationOptions o = options_;
  o.training_tasks = {*next};
  for (const CoordTask& t : training_) {
    if (t.id() != next->id()) o.training_tasks.push_back(t);
  }
  CoordinationOptions::Failover f;
  f.generation = generation_;
  for (const CoordTask& t : training_) {
    if (std::find(group.begin(), group.end(), t.id()) == group.end()) f.lost.push_back(t.id());
  }
  f.why = fmt::format("{}, which hosted the coordination service, was lost (its connection closed); {} hosts the "
                      "service from now on and takes over the chief's duties",
                      lost_label, next->label());
  o.failover = std::move(f);
  if (next->id() == self) {
    auto service = CoordinationService::start("0.0.0.0:" + address_port(next->address), o);
    if (!service) return service.error();
    service_ = std::move(*service);
  }
  retired_.push_back(std::move(client_));
  const CoordTask me{rc_.task.type, rc_.task.index, rc_.address};
  auto client = CoordinationClient::connect(next->address, next->label(), me, false, o);
  if (!client) {
    return cluster_error(fmt::format("{} was lost, and the group could not form again around {}: {}", lost_label,
                                     next->label(), client.error().message));
  }
  client_ = std::move(*client);
  host_lost_.store(false);
  watch_client();
  return Status::Ok();
}

Result<ClusterRuntime::Membership> ClusterRuntime::next_membership() {
  const double heartbeat = rpc_time::default_heartbeat_secs(rc_.timeout_secs);
  const auto wait = std::chrono::milliseconds(static_cast<int64_t>((rc_.timeout_secs + 3 * heartbeat + 3) * 1000));
  // The newest generation posted (a service that took over posts one past
  // the last of the lost service, which a member may not have taken).
  const auto deadline = std::chrono::steady_clock::now() + wait;
  Result<std::string> posted = cluster_error("no membership posted");
  for (;;) {
    if (host_lost_.load()) {
      if (Status s = fail_over(); !s) return s.error();
    }
    if (client_->membership_generation() > generation_ + 1) generation_ = client_->membership_generation() - 1;
    posted = client_->get(membership_key(generation_ + 1), std::chrono::milliseconds(300));
    if (posted.ok() || std::chrono::steady_clock::now() >= deadline || (client_->failure() && !host_lost_.load())) break;
  }
  if (!posted) return posted.error();
  Membership m;
  std::string value = *posted;
  for (;;) {
    ++generation_;
    const size_t eol = value.find('\n');
    m.reasons.push_back(value.substr(0, eol));
    members_.clear();
    for (size_t at = eol; at != std::string::npos && at + 1 <= value.size();) {
      const size_t next = value.find('\n', at + 1);
      std::string line = value.substr(at + 1, next == std::string::npos ? std::string::npos : next - at - 1);
      std::string address;
      if (const size_t tab = line.find('\t'); tab != std::string::npos) {
        address = line.substr(tab + 1);
        line.resize(tab);
      }
      // A worker beyond this task's cluster spec (strategy.elastic.max_workers).
      const bool known = std::any_of(training_.begin(), training_.end(), [&](const CoordTask& t) { return t.id() == line; });
      const size_t space = line.rfind(' ');
      if (!known && space != std::string::npos) {
        training_.push_back({line.substr(0, space), std::stoll(line.substr(space + 1)), address});
      }
      members_.push_back(std::move(line));
      at = next;
    }
    // Tasks lost at nearly the same moment: take the newest membership.
    if (client_->membership_generation() <= generation_) break;
    Result<std::string> newer = client_->get(membership_key(generation_ + 1), std::chrono::milliseconds(300));
    if (!newer) break;
    value = *newer;
  }
  m.generation = generation_;
  const std::string self = CoordTask{rc_.task.type, rc_.task.index, rc_.address}.id();
  for (const std::string& id : members_) {
    for (const CoordTask& t : training_) {
      if (t.id() != id) continue;
      if (id == self) m.rank = static_cast<int>(m.tasks.size());
      m.tasks.push_back(t);
    }
  }
  if (m.rank < 0) {
    return cluster_error(fmt::format("elastic membership {}: this task ({}) is no longer one of the training tasks",
                                     generation_, self));
  }
  chief_ = m.rank == 0;
  return m;
}

}  // namespace dtrain
