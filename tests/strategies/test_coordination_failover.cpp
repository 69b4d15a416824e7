// Elastic collective training outlives the task that hosts the coordination
// service (CoordinationOptions::failover): a service started by a survivor
// takes the group of the lost one, posts the next membership once the
// members have registered again, names its host for tasks that start later,
// and takes back a lost task as a rejoin; clients tell the service's end
// from the cluster's other failures; a worker beyond the cluster spec joins
// under elastic.max_workers. Real gRPC on loopback.
#include <doctest.h>

#include <future>

#include "tests/strategies/coord_test_util.hpp"

using namespace dtrain;
using namespace dtrain::testing;
using namespace std::chrono_literals;

namespace {

// The service a survivor starts: worker 1 hosts it, worker 0 (the lost host)
// is not in the group; the lost service had posted membership 3.
CoordinationOptions taken_over(double timeout_secs) {
  CoordinationOptions o;
  o.training_tasks = {worker(1), worker(0), worker(2)};
  o.timeout_secs = timeout_secs;
  o.elastic_min_workers = 2;
  o.failover = CoordinationOptions::Failover{3, {"worker 0"}, "worker 0 was lost"};
  return o;
}

std::unique_ptr<CoordinationService> start(const CoordinationOptions& o) {
  auto s = CoordinationService::start("127.0.0.1:0", o);
  REQUIRE_MESSAGE(s.ok(), s.error().message);
  return std::move(*s);
}

}  // namespace

TEST_CASE("coordination failover: the survivors form the group again and the next membership lists them") {
  CoordinationOptions o = taken_over(3);
  auto service = start(o);
  const std::string addr = local(service->port());
  CHECK(coordination_host_at(addr, 1000ms) == std::optional<std::string>("worker 1"));
  // The lost task is not waited for: the rendezvous is the two survivors.
  ConnectedTasks c = connect_tasks(addr, {worker(1), worker(2)}, o);
  REQUIRE(c.clients[0] != nullptr);
  REQUIRE(c.clients[1] != nullptr);
  auto m = c.clients[1]->get(membership_key(4), 2000ms);
  REQUIRE_MESSAGE(m.ok(), m.error().message);
  CHECK(*m == "worker 0 was lost\nworker 1\t127.0.0.1:5001\nworker 2\t127.0.0.1:5002");
  CHECK_FALSE(c.clients[0]->get(membership_key(3), 300ms).ok());  // the lost service's were not carried over
  // Attach streams tell the new generation.
  auto until = Clock::now() + 2s;
  while (c.clients[1]->membership_generation() < 4 && Clock::now() < until) std::this_thread::sleep_for(5ms);
  CHECK(c.clients[1]->membership_generation() == 4);

  // The lost host starts again: it joins, after the host, in the next membership.
  auto back = CoordinationClient::connect(addr, "worker 1", worker(0), false, o);
  REQUIRE_MESSAGE(back.ok(), back.error().message);
  FailureSink sink;
  (*back)->on_failure(sink.handler());
  auto g = (*back)->get(rejoin_key("worker 0"), 1000ms);
  REQUIRE_MESSAGE(g.ok(), g.error().message);
  CHECK(*g == "5");
  auto m5 = (*back)->get(membership_key(5), 1000ms);
  REQUIRE(m5.ok());
  CHECK(*m5 == "worker 0 (127.0.0.1:5000) joined again (its process started anew)\nworker 1\t127.0.0.1:5001\nworker "
              "0\t127.0.0.1:5000\nworker 2\t127.0.0.1:5002");
  for (auto& client : c.clients) client->leave();
  (*back)->leave();
  CHECK(service->wait_all_left(Clock::now() + 2s));
  CHECK(service->failure().empty());
}

TEST_CASE("coordination failover: a lost task that registers before the group formed again waits for it") {
  CoordinationOptions o = taken_over(3);
  auto service = start(o);
  const std::string addr = local(service->port());
  auto early = std::async(std::launch::async, [&] {
    return CoordinationClient::connect(addr, "worker 1", worker(0), false, o);
  });
  CHECK(early.wait_for(400ms) == std::future_status::timeout);  // no group to join yet
  ConnectedTasks c = connect_tasks(addr, {worker(1), worker(2)}, o);
  REQUIRE(c.clients[0] != nullptr);
  auto back = early.get();
  REQUIRE_MESSAGE(back.ok(), back.error().message);
  FailureSink sink;
  (*back)->on_failure(sink.handler());
  // It came back as a rejoin, in the membership after the survivors'.
  auto g = (*back)->get(rejoin_key("worker 0"), 1000ms);
  REQUIRE_MESSAGE(g.ok(), g.error().message);
  CHECK(*g == "5");
  for (auto& client : c.clients) client->leave();
  (*back)->leave();
}

TEST_CASE("coordination failover: clients tell the service's end from another task's failure") {
  CoordinationOptions o = worker_options(2, 3);
  o.elastic_min_workers = 2;
  auto service = start(o);
  const std::string addr = local(service->port());
  CHECK(coordination_host_at(addr, 1000ms) == std::optional<std::string>("worker 0"));
  ConnectedTasks c = connect_tasks(addr, o.training_tasks, o);
  REQUIRE(c.clients[0] != nullptr);
  REQUIRE(c.clients[1] != nullptr);
  c.clients[0]->report_error("a data error");
  auto e = c.sinks[1]->wait(3s);
  REQUIRE(e.has_value());
  CHECK_FALSE(c.clients[1]->service_lost());

  CoordinationOptions o2 = worker_options(2, 3);
  auto second = start(o2);
  const std::string addr2 = local(second->port());
  CHECK_FALSE(coordination_host_at(addr2, 1000ms).has_value());  // not elastic: no host named
  ConnectedTasks d = connect_tasks(addr2, o2.training_tasks, o2);
  REQUIRE(d.clients[1] != nullptr);
  second.reset();
  REQUIRE(d.sinks[1]->wait(3s).has_value());
  CHECK(d.clients[1]->service_lost());
  // Nobody at a released port: no host, and at once.
  const auto t0 = Clock::now();
  CHECK_FALSE(coordination_host_at(addr2, 1000ms).has_value());
  CHECK(secs_since(t0) < 0.9);
}

TEST_CASE("coordination: a worker beyond the spec joins under max_workers, and one more is refused") {
  CoordinationOptions o = worker_options(2, 3);
  o.elastic_min_workers = 2;
  o.elastic_max_workers = 3;
  auto service = start(o);
  const std::string addr = local(service->port());
  ConnectedTasks c = connect_tasks(addr, o.training_tasks, o);
  REQUIRE(c.clients[0] != nullptr);
  REQUIRE(c.clients[1] != nullptr);
  auto third = CoordinationClient::connect(addr, "worker 0", worker(2), false, o);
  REQUIRE_MESSAGE(third.ok(), third.error().message);
  FailureSink sink;
  (*third)->on_failure(sink.handler());
  auto g = (*third)->get(rejoin_key("worker 2"), 1000ms);
  REQUIRE_MESSAGE(g.ok(), g.error().message);
  CHECK(*g == "1");
  auto m = c.clients[0]->get(membership_key(1), 1000ms);
  REQUIRE(m.ok());
  CHECK(*m == "worker 2 (127.0.0.1:5002) joined (a worker beyond the cluster spec; up to "
              "strategy.elastic.max_workers 3)\nworker 0\t127.0.0.1:5000\nworker 1\t127.0.0.1:5001\nworker "
              "2\t127.0.0.1:5002");
  auto fourth = CoordinationClient::connect(addr, "worker 0", worker(3), false, o);
  REQUIRE_FALSE(fourth.ok());
  CHECK_MESSAGE(fourth.error().message.find("worker 3 (127.0.0.1:5003) cannot join: the running group has 3 training "
                                            "tasks, strategy.elastic.max_workers") != std::string::npos,
                fourth.error().message);
  // A new worker counts like the others: its loss is a membership, not a failure.
  third->reset();
  auto lost = c.clients[0]->get(membership_key(2), 2000ms);
  REQUIRE_MESSAGE(lost.ok(), lost.error().message);
  CHECK(lost->find("worker 2 (127.0.0.1:5002) ended without leaving") == 0);
  CHECK(service->failure().empty());
  for (auto& client : c.clients) client->leave();
}
