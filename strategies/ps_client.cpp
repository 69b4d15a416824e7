// A worker's (or the chief's) connection to one ps task's parameter service
// (strategies/ps_service.hpp): unary calls retried while the ps does not
// answer, and calls that wait (for init or a step) repeated, each at most
// kMaxPoll long, until the client's deadline.
#include <fmt/format.h>
#include <grpcpp/grpcpp.h>

#include <atomic>
#include <functional>

#include "engine/thread_errors.hpp"
#include "strategies/parameter_server.grpc.pb.h"
#include "strategies/ps_internal.hpp"
#include "strategies/ps_service.hpp"

namespace dtrain {

using namespace ps_internal;

namespace {

// Slack on a call's deadline beyond the time the server may wait before answering.
constexpr std::chrono::milliseconds kGrace{1000};
// Pause between attempts while the ps does not answer.
constexpr std::chrono::milliseconds kRetryPause{50};
// How long one wait for a step lasts when it may be given up (set_abandon).
constexpr std::chrono::milliseconds kAbandonPoll{50};

// The ps answered that nobody called init yet.
bool not_initialized(const grpc::Status& s) { return s.error_code() == grpc::StatusCode::FAILED_PRECONDITION; }

}  // namespace

class PsClient::Impl {
 public:
  Impl(const std::string& address, const std::string& label, double timeout_secs)
      : timeout_secs_(timeout_secs), timeout_(to_duration(timeout_secs)) {
    if (label.empty()) {
      name_ = fmt::format("the ps at {}", address);
    } else if (label.find(address) == std::string::npos) {
      name_ = fmt::format("{} ({})", label, address);
    } else {
      name_ = label;
    }
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_ENABLE_HTTP_PROXY, 0);  // loopback and cluster hosts never go through a proxy
    // Reconnect quickly: a worker may start before its ps does.
    args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
    args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
    args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 1000);
    args.SetMaxReceiveMessageSize(-1);  // shards may exceed gRPC's 4 MB default
    args.SetMaxSendMessageSize(-1);
    channel_ = grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args);
    stub_ = ps::ParameterServer::NewStub(channel_);
  }

  Status connect() {
    if (!channel_->WaitForConnected(grpc_time(Clock::now() + timeout_))) {
      return cluster_error(fmt::format("could not connect to {} within {} s", name_, format_secs(timeout_secs_)));
    }
    return {};
  }

  Status init(const std::vector<PsShard>& shards, const PsState& state) {
    ps::InitRequest req;
    req.set_step(state.step);
    int64_t bytes = 0;
    for (const PsShard& s : shards) {
      ps::Shard* out = req.add_shards();
      out->set_name(s.name);
      out->set_row_begin(s.row_begin);
      out->set_row_end(s.row_end);
      for (int64_t d : s.shape) out->add_shape(d);
      out->set_trainable(s.trainable);
    }
    for (const Tensor& t : state.values) bytes += to_proto(t, req.add_values());
    for (const std::vector<Tensor>& slots : state.slots) {
      ps::TensorList* list = req.add_slots();
      for (const Tensor& t : slots) bytes += to_proto(t, list->add_tensors());
    }
    ps::Empty resp;
    grpc::Status s = unary([&](grpc::ClientContext* ctx, int64_t) { return stub_->Init(ctx, req, &resp); });
    if (!s.ok()) return describe(s, "init");
    bytes_sent_ += bytes;
    return {};
  }

  Result<PsState> read(int64_t min_step, bool with_slots) {
    ps::PullResponse resp;
    Clock::time_point start = Clock::now();
    Clock::time_point deadline = start + timeout_;
    grpc::Status s;
    const char* what = with_slots ? "snapshot" : "pull";
    while (true) {
      // Elastic training: a step that a lost worker never completes is given up.
      if (abandon_ && abandon_()) {
        return cluster_error(fmt::format("{}: {} of global step {} given up: the workers changed", name_, what,
                                         min_step));
      }
      int64_t wait_ms = std::min<int64_t>(ms_until(deadline), abandon_ ? kAbandonPoll.count() : kMaxPoll.count());
      grpc::ClientContext ctx;
      ctx.set_deadline(grpc_time(std::max(deadline, Clock::now() + std::chrono::milliseconds(wait_ms) + kGrace)));
      ps::PullRequest req;
      req.set_min_step(min_step);
      req.set_wait_ms(wait_ms);
      resp.Clear();
      s = with_slots ? stub_->Snapshot(&ctx, req, &resp) : stub_->Pull(&ctx, req, &resp);
      if (s.ok()) {
        // The ps's own timeout bounds the wait too.
        deadline = std::min(deadline, start + std::chrono::milliseconds(resp.timeout_ms()));
        if (resp.ready()) break;
      }
      bool retry = transport_failure(s) || not_initialized(s) || s.ok();
      if (!retry || Clock::now() >= deadline) break;
      if (transport_failure(s)) pause_connecting(*channel_, kRetryPause);
    }
    if (!s.ok()) return describe(s, what);
    if (!resp.ready()) {
      double waited = std::chrono::duration<double>(deadline - start).count();
      return cluster_error(fmt::format("{}: {} of global step {} failed: the ps did not reach it within {} s (it is "
                                       "at step {})", name_, what, min_step, format_secs(waited), resp.step()));
    }
    PsState out;
    out.step = resp.step();
    int64_t bytes = 0;
    for (const ps::Tensor& t : resp.values()) {
      Result<Tensor> v = from_proto(t);
      if (!v.ok()) return cluster_error(fmt::format("{}: {}: {}", name_, what, v.error().message));
      bytes += payload_bytes(t);
      out.values.push_back(std::move(*v));
    }
    for (const ps::TensorList& list : resp.slots()) {
      std::vector<Tensor>& slots = out.slots.emplace_back();
      for (const ps::Tensor& t : list.tensors()) {
        Result<Tensor> v = from_proto(t);
        if (!v.ok()) return cluster_error(fmt::format("{}: {}: {}", name_, what, v.error().message));
        bytes += payload_bytes(t);
        slots.push_back(std::move(*v));
      }
    }
    bytes_received_ += bytes;
    return out;
  }

  Status push(int worker, int64_t step, float lr, const std::vector<Tensor>& grads, bool skip, int64_t generation) {
    ps::PushRequest req;
    req.set_skip(skip);
    req.set_generation(generation);
    req.set_worker(worker);
    req.set_step(step);
    req.set_lr(lr);
    int64_t bytes = 0;
    for (const Tensor& t : grads) bytes += to_proto(t, req.add_grads());
    ps::Empty resp;
    maybe_pause_for_test("ps push");
    grpc::Status s = unary([&](grpc::ClientContext* ctx, int64_t wait_ms) {
      req.set_wait_ms(wait_ms);
      return stub_->Push(ctx, req, &resp);
    });
    if (!s.ok()) return describe(s, fmt::format("the push of worker {} for global step {}", worker, step));
    bytes_sent_ += bytes;
    return {};
  }

  Status push_values(const std::vector<Tensor>& values) {
    ps::PushValuesRequest req;
    int64_t bytes = 0;
    for (const Tensor& t : values) bytes += to_proto(t, req.add_values());
    ps::Empty resp;
    grpc::Status s = unary([&](grpc::ClientContext* ctx, int64_t wait_ms) {
      req.set_wait_ms(wait_ms);
      return stub_->PushValues(ctx, req, &resp);
    });
    if (!s.ok()) return describe(s, "push_values");
    bytes_sent_ += bytes;
    return {};
  }

  Result<int64_t> fence(int64_t generation, int members, const std::vector<size_t>& bounds, int64_t rewind_to) {
    ps::FenceRequest req;
    req.set_generation(generation);
    req.set_members(members);
    for (size_t b : bounds) req.add_bounds(static_cast<int64_t>(b));
    req.set_rewind_to(rewind_to);
    ps::FenceResponse resp;
    grpc::Status s = unary([&](grpc::ClientContext* ctx, int64_t) { return stub_->Fence(ctx, req, &resp); });
    if (!s.ok()) return describe(s, fmt::format("the fence of membership generation {}", generation));
    return resp.empty() ? PsClient::kHoldsNothing : resp.step();
  }

  void set_abandon(std::function<bool()> abandon) { abandon_ = std::move(abandon); }

  Status shutdown() {
    ps::Empty req, resp;
    grpc::Status s = unary([&](grpc::ClientContext* ctx, int64_t) { return stub_->Shutdown(ctx, req, &resp); });
    if (!s.ok()) return describe(s, "shutdown");
    return {};
  }

  int64_t bytes_sent() const { return bytes_sent_.load(); }
  int64_t bytes_received() const { return bytes_received_.load(); }

 private:
  // "<ps> did not answer within T s: ..." for a transport failure, "<ps> was
  // not initialized ..." when nobody called init, "<ps> rejected <what>: ..."
  // for an answer that refuses the request.
  Error describe(const grpc::Status& s, const std::string& what) const {
    if (transport_failure(s)) {
      return cluster_error(fmt::format("{} did not answer within {} s ({}): {}", name_, format_secs(timeout_secs_),
                                       what, s.error_message()));
    }
    if (not_initialized(s)) {
      return cluster_error(fmt::format("{} was not initialized within {} s ({}): {}", name_,
                                       format_secs(timeout_secs_), what, s.error_message()));
    }
    return cluster_error(fmt::format("{} rejected {}: {}", name_, what, s.error_message()));
  }

  // One call rpc(ctx, wait_ms) repeated while the ps does not answer or holds
  // nothing yet, until the timeout; wait_ms is how long the ps may wait for init.
  grpc::Status unary(const std::function<grpc::Status(grpc::ClientContext*, int64_t)>& rpc) {
    Clock::time_point deadline = Clock::now() + timeout_;
    while (true) {
      int64_t wait_ms = std::min<int64_t>(ms_until(deadline), kMaxPoll.count());
      grpc::ClientContext ctx;
      ctx.set_deadline(grpc_time(std::max(deadline, Clock::now() + std::chrono::milliseconds(wait_ms) + kGrace)));
      grpc::Status s = rpc(&ctx, wait_ms);
      if ((!transport_failure(s) && !not_initialized(s)) || Clock::now() >= deadline) return s;
      if (abandon_ && abandon_()) return s;  // elastic: the ps was lost, and the group regroups
      if (transport_failure(s)) pause_connecting(*channel_, kRetryPause);
    }
  }

  const double timeout_secs_;
  const Clock::duration timeout_;
  std::string name_;  // "ps 1 (host:port)"
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<ps::ParameterServer::Stub> stub_;  // thread-safe
  std::function<bool()> abandon_;  // set before the calls that use it (set_abandon)
  std::atomic<int64_t> bytes_sent_{0};
  std::atomic<int64_t> bytes_received_{0};
};

Result<std::unique_ptr<PsClient>> PsClient::connect(const std::string& address, const std::string& label,
                                                    double timeout_secs) {
  auto impl = std::make_unique<Impl>(address, label, timeout_secs);
  if (Status s = impl->connect(); !s.ok()) return s.error();
  return std::unique_ptr<PsClient>(new PsClient(std::move(impl)));
}

PsClient::PsClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
PsClient::~PsClient() = default;

Status PsClient::init(const std::vector<PsShard>& shards, const PsState& state) { return impl_->init(shards, state); }
Result<PsState> PsClient::pull(int64_t min_step) { return impl_->read(min_step, false); }
Status PsClient::push(int worker, int64_t step, float lr, const std::vector<Tensor>& grads, bool skip,
                      int64_t generation) {
  return impl_->push(worker, step, lr, grads, skip, generation);
}
Result<int64_t> PsClient::fence(int64_t generation, int members, const std::vector<size_t>& bounds,
                                int64_t rewind_to) {
  return impl_->fence(generation, members, bounds, rewind_to);
}
void PsClient::set_abandon(std::function<bool()> abandon) { impl_->set_abandon(std::move(abandon)); }
Status PsClient::push_values(const std::vector<Tensor>& values) { return impl_->push_values(values); }
Result<PsState> PsClient::snapshot(int64_t min_step) { return impl_->read(min_step, true); }
int64_t PsClient::bytes_sent() const { return impl_->bytes_sent(); }
int64_t PsClient::bytes_received() const { return impl_->bytes_received(); }
Status PsClient::shutdown() { return impl_->shutdown(); }

}  // namespace dtrain
