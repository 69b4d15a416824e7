// The coordination service and client over real gRPC on loopback: rendezvous
// with a deadline, heartbeats and death detection, error reports, the
// key-value store, barriers, leave and observers, and the default handler
// (a child process that must exit with status 4). Timeouts are 1-3 s.
#include <doctest.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <cstring>

#include "tests/strategies/coord_test_util.hpp"

using namespace dtrain;
using namespace dtrain::testing;
using namespace std::chrono_literals;

namespace {

std::unique_ptr<CoordinationService> start_service(const CoordinationOptions& o,
                                                   const std::string& addr = "127.0.0.1:0") {
  auto s = CoordinationService::start(addr, o);
  REQUIRE_MESSAGE(s.ok(), s.error().message);
  return std::move(*s);
}

// A port nobody listens on (bound once by a service, then released).
int free_port() { return start_service(worker_options(1, 1))->port(); }

// Polls service.failure() until it is set; returns when it was seen.
Clock::time_point wait_service_failure(const CoordinationService& s, std::chrono::milliseconds limit) {
  auto until = Clock::now() + limit;
  while (s.failure().empty() && Clock::now() < until) std::this_thread::sleep_for(5ms);
  return Clock::now();
}

}  // namespace

TEST_CASE("coordination: rendezvous of tasks that start before the service, then a healthy cluster") {
  CoordinationOptions o = worker_options(3, 1.5);
  int port = free_port();
  std::unique_ptr<CoordinationService> service;
  auto t0 = Clock::now();
  std::thread starter([&] {
    std::this_thread::sleep_for(300ms);  // the clients are already retrying
    auto s = CoordinationService::start(local(port), o);
    if (s.ok()) service = std::move(*s);
  });
  ConnectedTasks c = connect_tasks(local(port), o.training_tasks, o);
  starter.join();
  REQUIRE(service != nullptr);
  for (size_t i = 0; i < 3; ++i) REQUIRE_MESSAGE(c.clients[i] != nullptr, c.errors[i]->message);
  CHECK(secs_since(t0) >= 0.25);
  CHECK(secs_since(t0) < 1.5);  // within the timeout
  // Heartbeats keep everyone alive past the timeout.
  std::this_thread::sleep_for(2000ms);
  CHECK(service->failure() == "");
  for (size_t i = 0; i < 3; ++i) {
    CHECK(c.sinks[i]->calls() == 0);
    CHECK_FALSE(c.clients[i]->failure().has_value());
  }
  CHECK_FALSE(service->wait_all_left(Clock::now() + 100ms));
  for (auto& client : c.clients) client->leave();
  c.clients[0]->leave();  // idempotent
  CHECK(service->wait_all_left(Clock::now() + 2s));
  std::this_thread::sleep_for(1700ms);  // tasks that left are never declared dead
  CHECK(service->failure() == "");
}

TEST_CASE("coordination: a task that never arrives fails the rendezvous for everyone") {
  CoordinationOptions o = worker_options(3, 1);
  SUBCASE("one missing") {
    auto service = start_service(o);
    auto t0 = Clock::now();
    ConnectedTasks c = connect_tasks(local(service->port()), {worker(0), worker(1)}, o);
    double took = secs_since(t0);
    const std::string want = "rendezvous: worker 2 (127.0.0.1:5002) did not arrive within 1 s";
    for (size_t i = 0; i < 2; ++i) {
      REQUIRE(c.errors[i].has_value());
      CHECK(c.errors[i]->kind == ErrorKind::kCluster);
      CHECK(c.errors[i]->message == want);
    }
    CHECK(took >= 0.9);
    CHECK(took < 2.5);
    wait_service_failure(*service, 1s);
    CHECK(service->failure() == want);
  }
  SUBCASE("two missing") {
    auto service = start_service(o);
    ConnectedTasks c = connect_tasks(local(service->port()), {worker(1)}, o);
    REQUIRE(c.errors[0].has_value());
    const std::string want =
        "rendezvous: worker 0 (127.0.0.1:5000) and worker 2 (127.0.0.1:5002) did not arrive within 1 s";
    CHECK(c.errors[0]->message == want);
    wait_service_failure(*service, 1s);
    CHECK(service->failure() == want);
  }
}

TEST_CASE("coordination: connect fails naming the service when it never answers") {
  int port = free_port();
  auto t0 = Clock::now();
  auto r = CoordinationClient::connect(local(port), "chief 0 (" + local(port) + ")", worker(0), false,
                                       worker_options(2, 1));
  double took = secs_since(t0);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().kind == ErrorKind::kCluster);
  std::string want = "the coordination service at " + local(port) + " (chief 0) did not answer within 1 s: ";
  CHECK_MESSAGE(r.error().message.rfind(want, 0) == 0, r.error().message);
  CHECK(took >= 0.9);
  CHECK(took < 3.0);
}

TEST_CASE("coordination: bad registrations and addresses are cluster errors") {
  CoordinationOptions o = worker_options(2, 1);
  auto service = start_service(o);
  std::string addr = local(service->port());
  auto stranger = CoordinationClient::connect(addr, "chief 0", worker(7), false, o);
  REQUIRE_FALSE(stranger.ok());
  CHECK(stranger.error().kind == ErrorKind::kCluster);
  CHECK(stranger.error().message == "the coordination service at " + addr +
                                        " (chief 0) rejected registering worker 7: worker 7 is not one of the "
                                        "training tasks of the cluster (worker 0 and worker 1)");
  auto observer = CoordinationClient::connect(addr, "chief 0", worker(1), true, o);
  REQUIRE_FALSE(observer.ok());
  CHECK(observer.error().message == "the coordination service at " + addr +
                                        " (chief 0) rejected registering worker 1: worker 1 is a training task "
                                        "and cannot register as an observer");
  auto second = CoordinationService::start(addr, o);
  REQUIRE_FALSE(second.ok());
  CHECK(second.error().kind == ErrorKind::kCluster);
  CHECK(second.error().message == "the coordination service could not listen on " + addr +
                                      " (the address is in use or not an address of this host)");
}

TEST_CASE("coordination: a task that hangs (no heartbeats, connection open) fails the cluster for the others") {
  CoordinationOptions o = worker_options(3, 1);
  auto service = start_service(o);
  ConnectedTasks c = connect_tasks(local(service->port()), o.training_tasks, o);
  for (size_t i = 0; i < 3; ++i) REQUIRE(c.clients[i] != nullptr);
  auto killed = Clock::now();
  c.clients[2]->hang_for_test();
  Clock::time_point seen = wait_service_failure(*service, 3s);
  const std::string want = "worker 2 (127.0.0.1:5002) sent no heartbeat for 1 s (the process died or hung)";
  CHECK(service->failure() == want);
  double detect = std::chrono::duration<double>(seen - killed).count();
  CHECK(detect >= 0.8);  // the last heartbeat may have come up to one interval (0.2 s) before the kill
  CHECK(detect < 2.0);
  for (size_t i = 0; i < 2; ++i) {
    auto e = c.sinks[i]->wait(2s);
    REQUIRE(e.has_value());
    CHECK(e->kind == ErrorKind::kCluster);
    CHECK(e->message == want);
    // Pushed down the attach streams: learnt at once.
    CHECK(std::chrono::duration<double>(c.sinks[i]->when() - seen).count() < 0.3);
    REQUIRE(c.clients[i]->failure().has_value());
    CHECK(c.clients[i]->failure()->message == want);
  }
  std::this_thread::sleep_for(400ms);
  CHECK(c.sinks[0]->calls() == 1);  // the handler runs once
}

TEST_CASE("coordination: a task whose process ends is named at once, with the last step it reported") {
  // A timeout far beyond the test: only the closed connection can explain the speed.
  CoordinationOptions o = worker_options(3, 30);
  auto service = start_service(o);
  ConnectedTasks c = connect_tasks(local(service->port()), o.training_tasks, o);
  for (size_t i = 0; i < 3; ++i) REQUIRE(c.clients[i] != nullptr);
  c.clients[2]->set_steps_done(7);
  std::this_thread::sleep_for(1300ms);  // the step goes out with the next heartbeat (at most 1 s)
  CHECK(service->failure() == "");
  auto killed = Clock::now();
  c.clients[2].reset();  // its connection closes without leave(), as when the process ends
  Clock::time_point seen = wait_service_failure(*service, 3s);
  const std::string want =
      "worker 2 (127.0.0.1:5002) ended without leaving the cluster after step 7 (the process exited or was killed: "
      "its connection to the coordination service closed)";
  CHECK(service->failure() == want);
  CHECK(std::chrono::duration<double>(seen - killed).count() < 0.5);
  for (size_t i = 0; i < 2; ++i) {
    auto e = c.sinks[i]->wait(1s);
    REQUIRE(e.has_value());
    CHECK(e->kind == ErrorKind::kCluster);
    CHECK(e->message == want);
    CHECK(std::chrono::duration<double>(c.sinks[i]->when() - killed).count() < 0.6);
  }
  // The host of the service can wait until every connected task was told.
  CHECK(service->wait_failure_told(Clock::now() + 1s));
}

TEST_CASE("coordination: report_error reaches every other task, observers included") {
  CoordinationOptions o = worker_options(3, 1);
  auto service = start_service(o);
  std::string addr = local(service->port());
  ConnectedTasks obs = connect_tasks(addr, {CoordTask{"evaluator", 0, ""}}, o, true);
  REQUIRE(obs.clients[0] != nullptr);
  ConnectedTasks c = connect_tasks(addr, o.training_tasks, o);
  for (size_t i = 0; i < 3; ++i) REQUIRE(c.clients[i] != nullptr);
  c.clients[1]->report_error("loss is NaN at step 7");
  const std::string want = "worker 1 (127.0.0.1:5001) failed: loss is NaN at step 7";
  CHECK(service->failure() == want);
  for (FailureSink* sink : {c.sinks[0].get(), c.sinks[2].get(), obs.sinks[0].get()}) {
    auto e = sink->wait(1s);
    REQUIRE(e.has_value());
    CHECK(e->kind == ErrorKind::kCluster);
    CHECK(e->message == want);
  }
  // The reporter knows already: its handler is not called, but failure() tells.
  std::this_thread::sleep_for(500ms);
  CHECK(c.sinks[1]->calls() == 0);
  REQUIRE(c.clients[1]->failure().has_value());
  CHECK(c.clients[1]->failure()->message == want);
  // Later calls fail at once with the cluster's failure.
  auto g = c.clients[0]->get("anything");
  REQUIRE_FALSE(g.ok());
  CHECK(g.error().message == want);
}

TEST_CASE("coordination: clients learn at once that the service is gone") {
  CoordinationOptions o = worker_options(2, 1);
  auto service = start_service(o);
  std::string addr = local(service->port());
  ConnectedTasks c = connect_tasks(addr, o.training_tasks, o);
  for (size_t i = 0; i < 2; ++i) REQUIRE(c.clients[i] != nullptr);
  Status in_barrier;
  std::thread waiter([&] { in_barrier = c.clients[0]->barrier("never complete"); });
  std::this_thread::sleep_for(200ms);  // a long-poll is now in flight
  auto gone = Clock::now();
  service.reset();
  CHECK(secs_since(gone) < 0.5);  // in-flight long-polls do not hold the destructor
  waiter.join();
  REQUIRE_FALSE(in_barrier.ok());
  std::string want = "the coordination service at " + addr + " (chief 0) did not answer within 1 s: ";
  CHECK_MESSAGE(in_barrier.error().message.rfind(want, 0) == 0, in_barrier.error().message);
  // The attach streams closed with the service: no wait for the heartbeat timeout.
  want = "the coordination service at " + addr +
         " (chief 0) closed its connection (the process that hosts it exited or was killed): ";
  for (size_t i = 0; i < 2; ++i) {
    auto e = c.sinks[i]->wait(3s);
    REQUIRE(e.has_value());
    CHECK(e->kind == ErrorKind::kCluster);
    CHECK_MESSAGE(e->message.rfind(want, 0) == 0, e->message);
    CHECK(std::chrono::duration<double>(c.sinks[i]->when() - gone).count() < 0.5);
  }
}

TEST_CASE("coordination: key-value store") {
  CoordinationOptions o = worker_options(2, 1);
  auto service = start_service(o);
  ConnectedTasks c = connect_tasks(local(service->port()), o.training_tasks, o);
  for (size_t i = 0; i < 2; ++i) REQUIRE(c.clients[i] != nullptr);
  CoordinationClient& a = *c.clients[0];
  CoordinationClient& b = *c.clients[1];

  const std::string binary("nccl\0id\xff", 8);
  REQUIRE(a.set("nccl/id", binary).ok());
  auto v = b.get("nccl/id");
  REQUIRE(v.ok());
  CHECK(*v == binary);
  REQUIRE(b.set("nccl/id", "v2").ok());  // overwrite
  CHECK(*a.get("nccl/id") == "v2");

  // get() waits for a key set later.
  auto t0 = Clock::now();
  std::thread setter([&] {
    std::this_thread::sleep_for(300ms);
    CHECK(a.set("late", "here").ok());
  });
  auto late = b.get("late");
  setter.join();
  REQUIRE(late.ok());
  CHECK(*late == "here");
  CHECK(secs_since(t0) >= 0.25);

  // ... and gives up after its timeout, naming the key.
  t0 = Clock::now();
  auto missing = b.get("never", 300ms);
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().kind == ErrorKind::kCluster);
  CHECK(missing.error().message == "coordination store: key \"never\" was not set within 0.3 s");
  CHECK(secs_since(t0) >= 0.28);
  CHECK(secs_since(t0) < 1.0);
  auto missing_default = a.get("never");
  REQUIRE_FALSE(missing_default.ok());
  CHECK(missing_default.error().message == "coordination store: key \"never\" was not set within 1 s");
  CHECK(service->failure() == "");  // a missing key does not fail the cluster
}

TEST_CASE("coordination: barriers") {
  CoordinationOptions o = worker_options(3, 1);
  auto service = start_service(o);
  ConnectedTasks c = connect_tasks(local(service->port()), o.training_tasks, o);
  for (size_t i = 0; i < 3; ++i) REQUIRE(c.clients[i] != nullptr);

  auto run_barrier = [&](const std::string& name, size_t n, std::vector<Status>* out) {
    std::vector<std::thread> threads;
    out->resize(n);
    for (size_t i = 0; i < n; ++i) {
      threads.emplace_back([&, i] {
        std::this_thread::sleep_for(std::chrono::milliseconds(100 * i));
        (*out)[i] = c.clients[i]->barrier(name);
      });
    }
    for (auto& t : threads) t.join();
  };
  std::vector<Status> all;
  auto t0 = Clock::now();
  run_barrier("after init", 3, &all);
  for (const Status& s : all) CHECK_MESSAGE(s.ok(), s.error().message);
  CHECK(secs_since(t0) >= 0.19);  // everyone waited for the last one
  CHECK(secs_since(t0) < 1.0);

  std::vector<Status> partial;
  t0 = Clock::now();
  run_barrier("end of epoch 1", 2, &partial);
  for (const Status& s : partial) {
    REQUIRE_FALSE(s.ok());
    CHECK(s.error().kind == ErrorKind::kCluster);
    CHECK(s.error().message == "barrier \"end of epoch 1\": worker 2 (127.0.0.1:5002) did not arrive within 1 s");
  }
  CHECK(secs_since(t0) >= 0.9);
  CHECK(secs_since(t0) < 2.5);
}

TEST_CASE("coordination: agreements tell every party whether any flag was set") {
  CoordinationOptions o = worker_options(3, 1);
  auto service = start_service(o);
  ConnectedTasks c = connect_tasks(local(service->port()), o.training_tasks, o);
  for (size_t i = 0; i < 3; ++i) REQUIRE(c.clients[i] != nullptr);
  auto run = [&](const std::string& name, std::vector<bool> flags, size_t n) {
    std::vector<Result<bool>> out(n, Result<bool>(false));
    std::vector<std::thread> threads;
    for (size_t i = 0; i < n; ++i) {
      threads.emplace_back([&, i] {
        std::this_thread::sleep_for(std::chrono::milliseconds(50 * i));
        out[i] = c.clients[i]->agree(name, flags[i], 3);
      });
    }
    for (auto& t : threads) t.join();
    return out;
  };
  for (const Result<bool>& r : run("a", {false, true, false}, 3)) {
    REQUIRE(r.ok());
    CHECK(*r == true);
  }
  for (const Result<bool>& r : run("b", {false, false, false}, 3)) {
    REQUIRE(r.ok());
    CHECK(*r == false);
  }
  auto t0 = Clock::now();
  for (const Result<bool>& r : run("c", {true, false, false}, 2)) {
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().kind == ErrorKind::kCluster);
    CHECK(r.error().message == "agreement \"c\": 2 of 3 tasks arrived within 1 s");
  }
  CHECK(secs_since(t0) >= 0.9);
  CHECK(service->failure() == "");
}

TEST_CASE("coordination: observers neither hold the rendezvous nor fail the cluster when they die") {
  CoordinationOptions o = worker_options(2, 1);
  auto service = start_service(o);
  std::string addr = local(service->port());
  auto t0 = Clock::now();
  ConnectedTasks obs = connect_tasks(addr, {CoordTask{"evaluator", 0, ""}}, o, true);
  REQUIRE(obs.clients[0] != nullptr);
  CHECK(secs_since(t0) < 0.5);  // registered, not waiting for the training tasks
  ConnectedTasks c = connect_tasks(addr, o.training_tasks, o);
  for (size_t i = 0; i < 2; ++i) REQUIRE(c.clients[i] != nullptr);
  obs.clients[0].reset();  // dies without leave()
  for (auto& client : c.clients) client->leave();
  // Every registered task has now left or (the observer, its connection
  // closed) been declared dead.
  auto t1 = Clock::now();
  CHECK(service->wait_all_left(Clock::now() + 3s));
  CHECK(secs_since(t1) < 0.5);
  CHECK(service->failure() == "");
  CHECK(service->dead_observers() == std::vector<std::string>{"evaluator 0"});
}

// Run in a child process by the next test case (does nothing otherwise):
// connects without a failure handler and waits for the default one to exit.
TEST_CASE("coordination: default failure handler child") {
  const char* addr = std::getenv("DTRAIN_TEST_COORD_SERVICE");
  if (addr == nullptr) return;
  auto r = CoordinationClient::connect(addr, "chief 0", worker(1), false, worker_options(2, 3));
  if (!r.ok()) _exit(10);
  std::this_thread::sleep_for(10s);
  _exit(11);  // the default handler should have ended this process
}

TEST_CASE("coordination: the default failure handler prints the failure and exits with status 4") {
  CoordinationOptions o = worker_options(2, 3);
  auto service = start_service(o);
  // Everything the child needs is built before fork(): only async-signal-safe calls after it.
  std::string env_var = "DTRAIN_TEST_COORD_SERVICE=" + local(service->port());
  std::string filter = "-tc=coordination: default failure handler child";
  std::vector<char*> argv = {const_cast<char*>("dtrain_unit_tests"), filter.data(), nullptr};
  std::vector<char*> envp;
  for (char** e = environ; *e != nullptr; ++e) envp.push_back(*e);
  envp.push_back(env_var.data());
  envp.push_back(nullptr);
  int err[2];
  REQUIRE(pipe(err) == 0);
  int devnull = open("/dev/null", O_WRONLY);
  REQUIRE(devnull >= 0);
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    dup2(devnull, 1);
    dup2(err[1], 2);
    close(err[0]);
    execve("/proc/self/exe", argv.data(), envp.data());
    _exit(12);
  }
  close(err[1]);
  close(devnull);

  auto parent = CoordinationClient::connect(local(service->port()), "chief 0", worker(0), false, o);
  REQUIRE_MESSAGE(parent.ok(), parent.error().message);
  FailureSink sink;
  (*parent)->on_failure(sink.handler());
  (*parent)->report_error("boom");

  int status = 0;
  pid_t done = 0;
  for (auto until = Clock::now() + 10s; done == 0 && Clock::now() < until; std::this_thread::sleep_for(20ms)) {
    done = waitpid(pid, &status, WNOHANG);
  }
  if (done == 0) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
  }
  std::string stderr_text;
  char buf[4096];
  for (ssize_t n; (n = read(err[0], buf, sizeof buf)) > 0;) stderr_text.append(buf, static_cast<size_t>(n));
  close(err[0]);
  REQUIRE(done == pid);
  REQUIRE_MESSAGE(WIFEXITED(status), stderr_text);
  CHECK_MESSAGE(WEXITSTATUS(status) == 4, stderr_text);
  CHECK_MESSAGE(stderr_text.find("dtrain: worker 0 (127.0.0.1:5000) failed: boom\n") != std::string::npos,
                stderr_text);
}
