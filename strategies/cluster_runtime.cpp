// Joining a multi-task cluster through the coordination service.
#include "strategies/cluster_runtime.hpp"

#include "strategies/rpc_time.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
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
  rt->elastic_min_workers_ = join.elastic_min_workers;
  for (const CoordTask& t : rt->training_) rt->members_.push_back(t.id());
  const CoordTask& host = rt->training_[0];
  if (rt->rank_ == 0) {
    // Listen on every interface at the chief's port: its cluster address may
    // name an interface by a host name this process cannot bind as given.
    auto service = CoordinationService::start("0.0.0.0:" + address_port(host.address), options);
    if (!service) return service.error();
    rt->service_ = std::move(*service);
  }
  CoordTask self{rc.task.type, rc.task.index, rc.address};
  const bool monitored = (rt->is_training_task() && (rt->rank_ == 0 || !join.workers_may_die)) ||
                         (join.with_ps && rc.task.type == "ps");
  auto client = CoordinationClient::connect(host.address, host.label(), self, !monitored, options);
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
  if (rt->service_) {
    // The service lives in this process: before it ends with the process,
    // let the failure go down every other task's attach stream (at most a
    // heartbeat or two), or they would only see the service vanish.
    const double heartbeat = rpc_time::default_heartbeat_secs(rc.timeout_secs);
    CoordinationService* service = rt->service_.get();
    rt->client_->on_failure([heartbeat, service](const Error& e) {
      std::fprintf(stderr, "dtrain: %s\n", e.message.c_str());
      std::fflush(stderr);
      service->wait_failure_told(std::chrono::steady_clock::now() +
                                 std::chrono::milliseconds(static_cast<int64_t>((2 * heartbeat + 0.5) * 1000)));
      _exit(static_cast<int>(ExitCode::kCluster));
    });
  }
  return rt;
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
  while (std::chrono::steady_clock::now() < deadline) {
    // The failure handler (set by the caller, or the default) ends the process.
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  std::fprintf(stderr, "dtrain: %s\n", e.message.c_str());
  std::fflush(stderr);
  _exit(static_cast<int>(ExitCode::kCluster));
}

}  // namespace dtrain

namespace dtrain {

bool ClusterRuntime::membership_superseded() const { return client_->membership_generation() > generation_; }

Result<ClusterRuntime::Membership> ClusterRuntime::next_membership() {
  const double heartbeat = rpc_time::default_heartbeat_secs(rc_.timeout_secs);
  const auto wait = std::chrono::milliseconds(static_cast<int64_t>((rc_.timeout_secs + 3 * heartbeat + 3) * 1000));
  Result<std::string> posted = client_->get(membership_key(generation_ + 1), wait);
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
      members_.push_back(value.substr(at + 1, next == std::string::npos ? std::string::npos : next - at - 1));
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
  return m;
}

}  // namespace dtrain
