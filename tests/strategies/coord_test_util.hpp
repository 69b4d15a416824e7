// Helpers for the coordination-service and Gloo tests: fake cluster tasks,
// failure handlers that record instead of exiting, and connecting several
// clients at once (each blocks in the rendezvous until all have arrived).
#pragma once

#include <fmt/format.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "strategies/coordination.hpp"

namespace dtrain::testing {

using Clock = std::chrono::steady_clock;

inline double secs_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// worker i at the fake address 127.0.0.1:5000+i (only used in messages).
inline CoordTask worker(int64_t i) { return CoordTask{"worker", i, fmt::format("127.0.0.1:{}", 5000 + i)}; }

inline CoordinationOptions worker_options(int n, double timeout_secs) {
  CoordinationOptions o;
  for (int i = 0; i < n; ++i) o.training_tasks.push_back(worker(i));
  o.timeout_secs = timeout_secs;
  return o;
}

inline std::string local(int port) { return fmt::format("127.0.0.1:{}", port); }

// A failure handler that records the first failure and when it came. The test
// process must never reach the default handler (it would _exit(4)).
class FailureSink {
 public:
  std::function<void(const Error&)> handler() {
    return [this](const Error& e) {
      std::lock_guard<std::mutex> lock(mu_);
      ++calls_;
      if (!error_) {
        error_ = e;
        when_ = Clock::now();
      }
      cv_.notify_all();
    };
  }
  // The failure, waiting up to `limit` for one.
  std::optional<Error> wait(std::chrono::milliseconds limit) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, limit, [&] { return error_.has_value(); });
    return error_;
  }
  Clock::time_point when() {
    std::lock_guard<std::mutex> lock(mu_);
    return when_;
  }
  int calls() {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::optional<Error> error_;
  Clock::time_point when_;
  int calls_ = 0;
};

// Clients connected in parallel; sinks[i] is client i's failure handler, set
// right after its connect returned. Declared before the clients, sinks outlive them.
struct ConnectedTasks {
  std::vector<std::unique_ptr<FailureSink>> sinks;
  std::vector<std::unique_ptr<CoordinationClient>> clients;  // null where connect failed
  std::vector<std::optional<Error>> errors;                  // connect's error, per task
};

inline ConnectedTasks connect_tasks(const std::string& address, const std::vector<CoordTask>& tasks,
                                    const CoordinationOptions& options, bool observer = false) {
  ConnectedTasks out;
  size_t n = tasks.size();
  out.clients.resize(n);
  out.errors.resize(n);
  for (size_t i = 0; i < n; ++i) out.sinks.push_back(std::make_unique<FailureSink>());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < n; ++i) {
    threads.emplace_back([&, i] {
      auto r = CoordinationClient::connect(address, "chief 0", tasks[i], observer, options);
      if (r.ok()) {
        (*r)->on_failure(out.sinks[i]->handler());
        out.clients[i] = std::move(*r);
      } else {
        out.errors[i] = r.error();
      }
    });
  }
  for (auto& t : threads) t.join();
  return out;
}

}  // namespace dtrain::testing
