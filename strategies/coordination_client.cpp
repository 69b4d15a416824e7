// A task's connection to the coordination service: registration and
// rendezvous, the heartbeat thread that turns a failed cluster into a call of
// the failure handler, the attach stream (the service's failure pushed at
// once; the service's end seen at once), the key-value store, barriers,
// error reports and leave.
#include <fmt/format.h>
#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>

#include "strategies/coordination.grpc.pb.h"
#include "engine/thread_errors.hpp"
#include "strategies/coordination_internal.hpp"

namespace dtrain {

using namespace coord_internal;

namespace {

// Slack on a call's deadline beyond the time the server may wait before answering.
constexpr std::chrono::milliseconds kGrace{1000};
// Pause between attempts while the service does not answer.
constexpr std::chrono::milliseconds kRetryPause{50};
// Longest wait for report_error() and leave(), which run while a task stops.
constexpr double kFarewellSecs = 5;
// Longest pause between heartbeats while the step advances (so that a
// failure names a recent step); otherwise the interval.
constexpr std::chrono::milliseconds kStepReport{1000};

[[noreturn]] void default_failure_handler(const Error& error) {
  std::fprintf(stderr, "dtrain: %s\n", error.message.c_str());
  std::fflush(stderr);
  _exit(static_cast<int>(ExitCode::kCluster));
}

}  // namespace

class CoordinationClient::Impl {
 public:
  Impl(const std::string& service_address, const std::string& service_label, const CoordTask& self, bool observer,
       const CoordinationOptions& options)
      : self_(self), observer_(observer), options_(options),
        timeout_(to_duration(options.timeout_secs)), interval_(to_duration(heartbeat_interval(options))) {
    // "chief 0 (host:port)" names the address twice in "... at host:port (chief 0)".
    std::string host_label = service_label;
    std::string suffix = " (" + service_address + ")";
    if (host_label.size() > suffix.size() && host_label.ends_with(suffix)) {
      host_label.resize(host_label.size() - suffix.size());
    }
    service_name_ = fmt::format("the coordination service at {}", service_address);
    if (!host_label.empty()) service_name_ += fmt::format(" ({})", host_label);
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_ENABLE_HTTP_PROXY, 0);  // loopback and cluster hosts never go through a proxy
    // Reconnect quickly: a task may start before the service does.
    args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
    args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
    args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 1000);
    channel_ = grpc::CreateCustomChannel(service_address, grpc::InsecureChannelCredentials(), args);
    stub_ = coord::Coordination::NewStub(channel_);
    to_proto(self_, &self_proto_);
  }

  ~Impl() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
      if (active_call_ != nullptr) active_call_->TryCancel();
      if (attach_call_ != nullptr) attach_call_->TryCancel();
    }
    cv_.notify_all();
    if (heartbeat_.joinable()) heartbeat_.join();
    if (attach_.joinable()) attach_.join();
  }

  Status connect() {
    coord::WaitResponse resp;
    auto register_call = [&](grpc::ClientContext* ctx, int64_t wait_ms, coord::WaitResponse* out) {
      coord::RegisterRequest req;
      *req.mutable_task() = self_proto_;
      req.set_observer(observer_);
      req.set_wait_ms(wait_ms);
      req.set_incarnation(incarnation_);
      return stub_->Register(ctx, req, out);
    };
    grpc::Status s = poll<coord::WaitResponse>(
        register_call, [](const coord::WaitResponse& r) { return r.complete() || !r.failure().empty(); }, &resp,
        Clock::now() + timeout_);
    if (!s.ok()) return cluster_error(describe(s, "registering " + self_.id()));
    if (!resp.failure().empty()) return cluster_error(resp.failure());
    if (!resp.complete()) return cluster_error(missing_message("rendezvous", resp));
    heartbeat_ = std::thread([this] {
      try {
        heartbeat_loop();
      } catch (...) {
        fail(current_exception_error("coordination heartbeat"));
      }
    });
    attach_ = std::thread([this] {
      try {
        attach_loop();
      } catch (...) {
        fail(current_exception_error("coordination attach"));
      }
    });
    return {};
  }

  int64_t membership_generation() const { return generation_.load(); }
  void set_steps_done(int64_t step) { steps_done_.store(step, std::memory_order_relaxed); }

  void hang_for_test() {
    std::lock_guard<std::mutex> lock(mu_);
    hung_ = true;
  }

  void on_failure(std::function<void(const Error&)> handler) {
    std::lock_guard<std::mutex> lock(mu_);
    handler_ = std::move(handler);
  }

  std::optional<Error> failure() const {
    std::lock_guard<std::mutex> lock(mu_);
    return failure_;
  }

  bool service_lost() const { return service_lost_.load(); }

  Status set(const std::string& key, const std::string& value) {
    if (auto f = failure()) return *f;
    coord::SetRequest req;
    req.set_key(key);
    req.set_value(value);
    coord::Empty resp;
    grpc::Status s = unary([&](grpc::ClientContext* ctx) { return stub_->Set(ctx, req, &resp); },
                           Clock::now() + timeout_);
    if (!s.ok()) return cluster_error(describe(s, fmt::format("setting key \"{}\"", key)));
    return {};
  }

  Result<std::string> get(const std::string& key, std::optional<std::chrono::milliseconds> timeout) {
    if (auto f = failure()) return *f;
    Clock::duration limit = timeout ? Clock::duration(*timeout) : timeout_;
    coord::GetResponse resp;
    auto get_call = [&](grpc::ClientContext* ctx, int64_t wait_ms, coord::GetResponse* out) {
      coord::GetRequest req;
      req.set_key(key);
      req.set_wait_ms(wait_ms);
      return stub_->Get(ctx, req, out);
    };
    grpc::Status s = poll<coord::GetResponse>(
        get_call, [](const coord::GetResponse& r) { return r.found() || !r.failure().empty(); }, &resp,
        Clock::now() + limit);
    if (!s.ok()) return cluster_error(describe(s, fmt::format("reading key \"{}\"", key)));
    if (!resp.failure().empty()) return cluster_error(resp.failure());
    if (!resp.found()) {
      double secs = std::chrono::duration<double>(limit).count();
      return cluster_error(
          fmt::format("coordination store: key \"{}\" was not set within {} s", key, format_secs(secs)));
    }
    return resp.value();
  }

  Status barrier(const std::string& name) {
    if (auto f = failure()) return *f;
    coord::WaitResponse resp;
    auto barrier_call = [&](grpc::ClientContext* ctx, int64_t wait_ms, coord::WaitResponse* out) {
      coord::BarrierRequest req;
      *req.mutable_task() = self_proto_;
      req.set_name(name);
      req.set_wait_ms(wait_ms);
      return stub_->Barrier(ctx, req, out);
    };
    grpc::Status s = poll<coord::WaitResponse>(
        barrier_call, [](const coord::WaitResponse& r) { return r.complete() || !r.failure().empty(); }, &resp,
        Clock::now() + timeout_);
    if (!s.ok()) return cluster_error(describe(s, fmt::format("entering barrier \"{}\"", name)));
    if (!resp.failure().empty()) return cluster_error(resp.failure());
    if (!resp.complete()) return cluster_error(missing_message(fmt::format("barrier \"{}\"", name), resp));
    return {};
  }

  Result<bool> agree(const std::string& name, bool flag, int64_t parties, const std::function<bool()>& abandon) {
    if (auto f = failure()) return *f;
    coord::AgreeResponse resp;
    auto agree_call = [&](grpc::ClientContext* ctx, int64_t wait_ms, coord::AgreeResponse* out) {
      coord::AgreeRequest req;
      *req.mutable_task() = self_proto_;
      req.set_name(name);
      req.set_flag(flag);
      req.set_parties(parties);
      req.set_wait_ms(wait_ms);
      req.set_generation(generation_.load());
      return stub_->Agree(ctx, req, out);
    };
    grpc::Status s = poll<coord::AgreeResponse>(
        agree_call,
        [&](const coord::AgreeResponse& r) { return r.complete() || !r.failure().empty() || (abandon && abandon()); },
        &resp, Clock::now() + timeout_);
    if (!s.ok()) return cluster_error(describe(s, fmt::format("agreement \"{}\"", name)));
    if (!resp.failure().empty()) return cluster_error(resp.failure());
    if (!resp.complete() && abandon && abandon()) {
      return cluster_error(fmt::format("agreement \"{}\" given up: the workers changed", name));
    }
    if (!resp.complete()) {
      return cluster_error(fmt::format("agreement \"{}\": {} of {} tasks arrived within {} s", name, resp.arrived(),
                                       parties, format_secs(options_.timeout_secs)));
    }
    return resp.any();
  }

  void report_error(const std::string& message) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      reported_ = true;  // this task knows: its own handler is not called for the failure it caused
    }
    coord::ReportErrorRequest req;
    *req.mutable_task() = self_proto_;
    req.set_message(message);
    coord::Empty resp;
    (void)unary([&](grpc::ClientContext* ctx) { return stub_->ReportError(ctx, req, &resp); }, farewell_deadline());
  }

  void leave() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (left_) return;
      left_ = true;
    }
    cv_.notify_all();
    coord::LeaveRequest req;
    *req.mutable_task() = self_proto_;
    coord::Empty resp;
    (void)unary([&](grpc::ClientContext* ctx) { return stub_->Leave(ctx, req, &resp); }, farewell_deadline());
  }

 private:
  Clock::time_point farewell_deadline() const {
    return Clock::now() + std::min(timeout_, to_duration(kFarewellSecs));
  }

  // "... did not answer within T s: <grpc message>" for a transport failure,
  // "... rejected <what>: <message>" for an answer that refuses the request.
  std::string describe(const grpc::Status& s, const std::string& what) const {
    if (transport_failure(s)) {
      return fmt::format("{} did not answer within {} s: {}", service_name_, format_secs(options_.timeout_secs),
                         s.error_message());
    }
    return fmt::format("{} rejected {}: {}", service_name_, what, s.error_message());
  }

  std::string missing_message(const std::string& what, const coord::WaitResponse& resp) const {
    std::vector<std::string> labels(resp.missing().begin(), resp.missing().end());
    return fmt::format("{}: {} did not arrive within {} s", what, join_labels(labels),
                       format_secs(options_.timeout_secs));
  }

  // One unary call, repeated while the service does not answer, until `deadline`.
  grpc::Status unary(const std::function<grpc::Status(grpc::ClientContext*)>& rpc, Clock::time_point deadline) {
    while (true) {
      grpc::ClientContext ctx;
      ctx.set_deadline(grpc_time(std::max(deadline, Clock::now() + kRetryPause)));
      grpc::Status s = rpc(&ctx);
      if (!transport_failure(s) || Clock::now() >= deadline) return s;
      pause_connecting(*channel_, kRetryPause);
    }
  }

  // A long-poll: calls rpc(ctx, wait_ms, resp) until done(*resp) or `deadline`
  // (the last call asks with the time left, so its answer is fresh). Returns
  // the last call's status; *resp holds the last answer.
  template <class Resp>
  grpc::Status poll(const std::function<grpc::Status(grpc::ClientContext*, int64_t, Resp*)>& rpc,
                    const std::function<bool(const Resp&)>& done, Resp* resp, Clock::time_point deadline) {
    while (true) {
      int64_t wait_ms = std::min<int64_t>(ms_until(deadline), kMaxPoll.count());
      grpc::ClientContext ctx;
      ctx.set_deadline(grpc_time(Clock::now() + std::chrono::milliseconds(wait_ms) + kGrace));
      Resp answer;
      grpc::Status s = rpc(&ctx, wait_ms, &answer);
      if (s.ok()) *resp = std::move(answer);
      if ((s.ok() && done(*resp)) || (!s.ok() && !transport_failure(s)) || Clock::now() >= deadline) return s;
      if (!s.ok()) pause_connecting(*channel_, std::min<Clock::duration>(kRetryPause, deadline - Clock::now()));
    }
  }

  // Sends a heartbeat every interval_ (at most kStepReport apart while the
  // step advances) until stopped, left, or the cluster failed.
  void heartbeat_loop() {
    Clock::time_point last_answer = Clock::now(), last_sent = Clock::now();
    int64_t steps_sent = 0;
    while (true) {
      {
        std::unique_lock<std::mutex> lock(mu_);
        if (cv_.wait_for(lock, std::min<Clock::duration>(interval_, kStepReport), [&] { return stop_ || left_; })) {
          return;
        }
        if (hung_) continue;
      }
      const int64_t steps = steps_done_.load(std::memory_order_relaxed);
      if (Clock::now() - last_sent < interval_ && steps == steps_sent) continue;
      maybe_throw_for_test("coordination heartbeat");
      grpc::ClientContext ctx;
      ctx.set_deadline(grpc_time(Clock::now() + std::max<Clock::duration>(interval_, kGrace)));
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (stop_ || left_) return;
        active_call_ = &ctx;  // the destructor cancels it
      }
      coord::HeartbeatRequest req;
      *req.mutable_task() = self_proto_;
      req.set_steps_done(steps);
      last_sent = Clock::now();
      steps_sent = steps;
      coord::HeartbeatResponse resp;
      grpc::Status s = stub_->Heartbeat(&ctx, req, &resp);
      {
        std::lock_guard<std::mutex> lock(mu_);
        active_call_ = nullptr;
        if (stop_ || left_) return;
      }
      if (s.ok()) {
        last_answer = Clock::now();
        if (!resp.failure().empty()) return fail(cluster_error(resp.failure()));
      } else if (Clock::now() - last_answer >= timeout_) {
        service_lost_.store(true);
        return fail(cluster_error(describe(s, "a heartbeat")));
      }
    }
  }

  // Holds the attach stream open until stopped or left: a failure written
  // down it is the cluster's; the stream's end before this task left means
  // the service's process ended (or closed the call): the cluster has failed.
  void attach_loop() {
    grpc::ClientContext ctx;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stop_ || left_) return;
      attach_call_ = &ctx;  // the destructor cancels it
    }
    coord::AttachRequest req;
    *req.mutable_task() = self_proto_;
    std::unique_ptr<grpc::ClientReader<coord::AttachEvent>> reader = stub_->Attach(&ctx, req);
    coord::AttachEvent event;
    std::string failure;
    while (reader->Read(&event)) {
      if (!event.failure().empty()) failure = event.failure();
      if (event.generation() > generation_.load()) generation_.store(event.generation());
    }
    grpc::Status s = reader->Finish();
    {
      std::lock_guard<std::mutex> lock(mu_);
      attach_call_ = nullptr;
      if (stop_ || (left_ && failure.empty())) return;
    }
    if (!failure.empty()) return fail(cluster_error(failure));
    if (s.ok()) return;  // the service ended the stream because this task left
    const int64_t steps = steps_done_.load(std::memory_order_relaxed);
    service_lost_.store(true);
    fail(cluster_error(fmt::format(
        "{} closed its connection{} (the process that hosts it exited or was killed): {}", service_name_,
        steps > 0 ? fmt::format(" after this task's step {}", steps) : std::string(), s.error_message())));
  }

  // Records the cluster's failure and calls the handler (once, on this thread).
  void fail(const Error& error) {
    std::function<void(const Error&)> handler;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (failure_) return;
      failure_ = error;
      if (reported_) return;
      handler = handler_;
    }
    if (handler) {
      handler(error);
    } else {
      default_failure_handler(error);
    }
  }

  const CoordTask self_;
  const bool observer_;
  const CoordinationOptions options_;
  const Clock::duration timeout_;
  const Clock::duration interval_;
  std::string service_name_;  // "the coordination service at host:port (chief 0)"
  coord::Task self_proto_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<coord::Coordination::Stub> stub_;  // thread-safe

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;                               // GUARDED_BY(mu_)
  bool left_ = false;                               // GUARDED_BY(mu_)
  bool reported_ = false;                           // GUARDED_BY(mu_)
  std::optional<Error> failure_;                    // GUARDED_BY(mu_)
  std::function<void(const Error&)> handler_;       // GUARDED_BY(mu_)
  bool hung_ = false;                               // GUARDED_BY(mu_), hang_for_test()
  grpc::ClientContext* active_call_ = nullptr;      // GUARDED_BY(mu_), the heartbeat in flight
  grpc::ClientContext* attach_call_ = nullptr;      // GUARDED_BY(mu_), the attach stream
  std::atomic<int64_t> steps_done_{0};
  std::atomic<int64_t> generation_{0};  // the newest membership generation pushed
  std::atomic<bool> service_lost_{false};  // the failure is the service's end
  // This process, told apart from an earlier one of the same task.
  const std::string incarnation_ = fmt::format(
      "{}-{}", ::getpid(), std::chrono::steady_clock::now().time_since_epoch().count());
  std::thread heartbeat_;
  std::thread attach_;
};

Result<std::unique_ptr<CoordinationClient>> CoordinationClient::connect(const std::string& service_address,
                                                                       const std::string& service_label,
                                                                       const CoordTask& self, bool observer,
                                                                       const CoordinationOptions& options) {
  auto impl = std::make_unique<Impl>(service_address, service_label, self, observer, options);
  if (Status s = impl->connect(); !s.ok()) return s.error();
  return std::unique_ptr<CoordinationClient>(new CoordinationClient(std::move(impl)));
}

CoordinationClient::CoordinationClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CoordinationClient::~CoordinationClient() = default;

void CoordinationClient::on_failure(std::function<void(const Error&)> handler) {
  impl_->on_failure(std::move(handler));
}
std::optional<Error> CoordinationClient::failure() const { return impl_->failure(); }
bool CoordinationClient::service_lost() const { return impl_->service_lost(); }
Status CoordinationClient::set(const std::string& key, const std::string& value) { return impl_->set(key, value); }
Result<std::string> CoordinationClient::get(const std::string& key, std::optional<std::chrono::milliseconds> timeout) {
  return impl_->get(key, timeout);
}
Status CoordinationClient::barrier(const std::string& name) { return impl_->barrier(name); }
Result<bool> CoordinationClient::agree(const std::string& name, bool flag, int64_t parties,
                                       const std::function<bool()>& abandon) {
  return impl_->agree(name, flag, parties, abandon);
}
void CoordinationClient::report_error(const std::string& message) { impl_->report_error(message); }
void CoordinationClient::leave() { impl_->leave(); }
void CoordinationClient::set_steps_done(int64_t step) { impl_->set_steps_done(step); }
int64_t CoordinationClient::membership_generation() const { return impl_->membership_generation(); }
void CoordinationClient::hang_for_test() { impl_->hang_for_test(); }

std::optional<std::string> coordination_host_at(const std::string& address, std::chrono::milliseconds timeout) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_ENABLE_HTTP_PROXY, 0);
  // A channel of its own: gRPC shares subchannels between channels to one
  // address, and a refused connection (the service not up yet) would make
  // every later probe fail at once for the reconnect backoff (a second).
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  auto channel = grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args);
  auto stub = coord::Coordination::NewStub(channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(grpc_time(Clock::now() + timeout));
  ctx.set_wait_for_ready(false);
  coord::GetRequest req;
  req.set_key(host_key());
  req.set_wait_ms(0);
  coord::GetResponse resp;
  if (!stub->Get(&ctx, req, &resp).ok() || !resp.found()) return std::nullopt;
  return resp.value();
}

}  // namespace dtrain
