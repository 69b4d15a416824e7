// The parameter service of a ps task (strategies/ps_service.hpp), a
// synchronous gRPC server: holds the shards and their optimizer slots,
// records (sync) or applies (async) the workers' gradients. One mutex guards
// all state; calls that wait for init or for a step wait on one condition
// variable, at most kMaxPoll per call.
#include <fmt/format.h>
#include <grpcpp/grpcpp.h>

#include <climits>
#include <condition_variable>
#include <map>
#include <mutex>

#include "engine/optim/optimizer.hpp"
#include "strategies/parameter_server.grpc.pb.h"
#include "strategies/ps_internal.hpp"
#include "strategies/ps_service.hpp"
#include "strategies/rpc_guard.hpp"
#include "strategies/tree_sum.hpp"

namespace dtrain {

using namespace ps_internal;

namespace {

// The gradients pushed for one global step (sync mode), indexed by worker.
struct PendingStep {
  std::vector<std::vector<Tensor>> grads;  // empty vector: not arrived yet
  std::vector<bool> arrived;
  int count = 0;
  float lr = 0;  // worker 0's learning rate
  bool skip = false;  // some worker's gradient is not finite: the step changes nothing
};

grpc::Status rejected(const std::string& message) { return {grpc::StatusCode::INVALID_ARGUMENT, message}; }

grpc::Status not_initialized() {
  return {grpc::StatusCode::FAILED_PRECONDITION, "the ps holds no variables yet (the chief has not called init)"};
}

// Decodes a list of tensors, or says which one is malformed.
Result<std::vector<Tensor>> decode_all(const google::protobuf::RepeatedPtrField<ps::Tensor>& in, const char* what) {
  std::vector<Tensor> out;
  out.reserve(static_cast<size_t>(in.size()));
  for (int i = 0; i < in.size(); ++i) {
    Result<Tensor> t = from_proto(in[i]);
    if (!t.ok()) return cluster_error(fmt::format("{} {}: {}", what, i, t.error().message));
    out.push_back(std::move(*t));
  }
  return out;
}

}  // namespace

class ParameterService::Impl final : public ps::ParameterServer::Service {
 public:
  Impl(const PsConfig& config, std::unique_ptr<Optimizer> optimizer)
      : config_(config),
        optimizer_(std::move(optimizer)),
        num_slots_(optimizer_->slot_names().size()),
        members_(config.num_workers) {}

  Result<int> listen(const std::string& address) {
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort(address, grpc::InsecureServerCredentials(), &port);
    builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);  // a second service on a used port must fail
    builder.SetMaxReceiveMessageSize(INT_MAX);
    builder.SetMaxSendMessageSize(INT_MAX);
    builder.RegisterService(this);
    server_ = builder.BuildAndStart();
    if (!server_ || port == 0) {
      return cluster_error(fmt::format(
          "the parameter service could not listen on {} (the address is in use or not an address of this host)",
          address));
    }
    port_ = port;
    return port;
  }

  int port() const { return port_; }

  void stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    if (server_) server_->Shutdown(grpc_time(Clock::now() + std::chrono::milliseconds(200)));
  }

  bool wait_for_shutdown(Clock::time_point deadline) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_until(lock, deadline, [&] { return shutdown_requested_; });
  }

  grpc::Status Init(grpc::ServerContext*, const ps::InitRequest* req, ps::Empty*) override {
    return guarded_rpc("parameter service init", [&]() -> grpc::Status {
      std::vector<PsShard> shards;
      std::vector<Tensor> values;
      std::vector<std::vector<Tensor>> slots;
      if (req->values_size() != req->shards_size()) {
        return rejected(fmt::format("init: {} values for {} shards", req->values_size(), req->shards_size()));
      }
      if (req->slots_size() != 0 && req->slots_size() != req->shards_size()) {
        return rejected(fmt::format("init: slots for {} shards, expected {}", req->slots_size(), req->shards_size()));
      }
      for (int i = 0; i < req->shards_size(); ++i) {
        const ps::Shard& s = req->shards(i);
        PsShard shard{s.name(), s.row_begin(), s.row_end(), Shape(s.shape().begin(), s.shape().end()), s.trainable()};
        Result<Tensor> value = from_proto(req->values(i));
        if (!value.ok()) return rejected(fmt::format("init: {}: {}", shard.name, value.error().message));
        if (value->empty() || value->shape() != shard.shape) {
          return rejected(fmt::format("init: {}: the value has shape {}, the shard {}", shard.name,
                                      value->empty() ? "none" : shape_str(value->shape()), shape_str(shard.shape)));
        }
        std::vector<Tensor> shard_slots;
        if (shard.trainable && req->slots_size() == 0) {
          for (size_t k = 0; k < num_slots_; ++k) {
            shard_slots.emplace_back(shard.shape, optimizer_->slot_initial_value(k));
          }
        } else if (shard.trainable) {
          Result<std::vector<Tensor>> given = decode_all(req->slots(i).tensors(), "slot");
          if (!given.ok()) return rejected(fmt::format("init: {}: {}", shard.name, given.error().message));
          if (given->size() != num_slots_) {
            return rejected(fmt::format("init: {}: {} slots, the optimizer {} has {}", shard.name, given->size(),
                                        optimizer_->name(), num_slots_));
          }
          for (const Tensor& t : *given) {
            if (t.empty() || t.shape() != shard.shape) {
              return rejected(fmt::format("init: {}: a slot does not have the shard's shape {}", shard.name,
                                          shape_str(shard.shape)));
            }
          }
          shard_slots = std::move(*given);
        }
        shards.push_back(std::move(shard));
        values.push_back(std::move(*value));
        slots.push_back(std::move(shard_slots));
      }
      std::lock_guard<std::mutex> lock(mu_);
      shards_ = std::move(shards);
      values_ = std::move(values);
      slots_ = std::move(slots);
      step_ = req->step();
      pending_.clear();
      kept_step_ = -1;
      initialized_ = true;
      cv_.notify_all();
      return grpc::Status::OK;
    });
  }

  grpc::Status Pull(grpc::ServerContext*, const ps::PullRequest* req, ps::PullResponse* resp) override {
    return guarded_rpc("parameter service pull", [&]() -> grpc::Status {
      return read(*req, resp, false);
    });
  }

  grpc::Status Snapshot(grpc::ServerContext*, const ps::PullRequest* req, ps::PullResponse* resp) override {
    return guarded_rpc("parameter service snapshot", [&]() -> grpc::Status {
      return read(*req, resp, true);
    });
  }

  grpc::Status Push(grpc::ServerContext*, const ps::PushRequest* req, ps::Empty*) override {
    return guarded_rpc("parameter service push", [&]() -> grpc::Status {
      std::string who = fmt::format("worker {}", req->worker());
      Result<std::vector<Tensor>> grads = decode_all(req->grads(), "gradient");
      if (!grads.ok()) return rejected(fmt::format("push from {}: {}", who, grads.error().message));
      std::unique_lock<std::mutex> lock(mu_);
      if (!wait_initialized(lock, req->wait_ms())) return stopping_ ? shutting_down() : not_initialized();
      if (req->generation() != generation_) {
        return rejected(fmt::format("push from {} for global step {}: it trains in membership generation {}, the ps "
                                    "in generation {} (the workers changed)",
                                    who, req->step(), req->generation(), generation_));
      }
      if (req->worker() < 0 || req->worker() >= members_) {
        return rejected(fmt::format("push from {}: the ps expects workers 0 to {}", who, members_ - 1));
      }
      if (Status s = check_shards(*grads, "gradient", false); !s.ok()) {
        return rejected(fmt::format("push from {} for global step {}: {}", who, req->step(), s.error().message));
      }
      if (!config_.sync) {
        if (req->skip()) {
          ++step_;
          cv_.notify_all();
          return grpc::Status::OK;
        }
        apply(*grads, req->lr());
        cv_.notify_all();
        return grpc::Status::OK;
      }
      if (req->step() < step_) {
        return rejected(fmt::format("{} pushed a gradient for global step {}, which is already applied (the ps is at "
                                    "step {})", who, req->step(), step_));
      }
      PendingStep& p = pending_[req->step()];
      if (p.arrived.empty()) {
        p.arrived.assign(static_cast<size_t>(members_), false);
        p.grads.resize(static_cast<size_t>(members_));
      }
      auto w = static_cast<size_t>(req->worker());
      if (p.arrived[w]) {
        return rejected(fmt::format("{} pushed a second gradient for global step {}", who, req->step()));
      }
      p.arrived[w] = true;
      p.grads[w] = std::move(*grads);
      if (w == 0) p.lr = req->lr();
      p.skip = p.skip || req->skip();
      ++p.count;
      apply_complete_steps();
      return grpc::Status::OK;
    });
  }

  grpc::Status PushValues(grpc::ServerContext*, const ps::PushValuesRequest* req, ps::Empty*) override {
    return guarded_rpc("parameter service push_values", [&]() -> grpc::Status {
      Result<std::vector<Tensor>> values = decode_all(req->values(), "value");
      if (!values.ok()) return rejected(fmt::format("push_values: {}", values.error().message));
      std::unique_lock<std::mutex> lock(mu_);
      if (!wait_initialized(lock, req->wait_ms())) return stopping_ ? shutting_down() : not_initialized();
      size_t frozen = 0;
      for (const PsShard& s : shards_) frozen += s.trainable ? 0 : 1;
      if (values->size() == frozen && frozen != shards_.size()) {  // only the non-trainable shards, in order
        std::vector<Tensor> all(shards_.size());
        for (size_t i = 0, k = 0; i < shards_.size(); ++i) {
          if (!shards_[i].trainable) all[i] = (*values)[k++];
        }
        *values = std::move(all);
      }
      if (Status s = check_shards(*values, "value", true); !s.ok()) {
        return rejected(fmt::format("push_values: {}", s.error().message));
      }
      for (size_t i = 0; i < shards_.size(); ++i) {
        if (!shards_[i].trainable) values_[i] = std::move((*values)[i]);
      }
      return grpc::Status::OK;
    });
  }

  grpc::Status Fence(grpc::ServerContext*, const ps::FenceRequest* req, ps::FenceResponse* resp) override {
    return guarded_rpc("parameter service fence", [&]() -> grpc::Status {
      std::unique_lock<std::mutex> lock(mu_);
      if (stopping_) return shutting_down();
      if (!config_.sync || !config_.elastic) return rejected("fence: this ps is not in elastic sync mode");
      if (!initialized_) {
        resp->set_empty(true);
        return grpc::Status::OK;
      }
      if (req->generation() < generation_) {
        return rejected(fmt::format("fence for membership generation {}: the ps is at generation {}",
                                    req->generation(), generation_));
      }
      if (req->members() < 1 || (req->bounds_size() != 0 && req->bounds_size() != req->members() + 1)) {
        return rejected(fmt::format("fence: {} members with {} bounds", req->members(), req->bounds_size()));
      }
      generation_ = req->generation();
      members_ = req->members();
      bounds_.assign(req->bounds().begin(), req->bounds().end());
      pending_.clear();
      if (req->rewind_to() >= 0 && step_ == req->rewind_to() + 1) {
        if (kept_step_ != req->rewind_to()) {
          return rejected(kept_step_ < 0 ? fmt::format("fence: step back to {}: the ps is at step {} and holds no "
                                                       "earlier state", req->rewind_to(), step_)
                                         : fmt::format("fence: step back to {}: the ps is at step {} and kept the "
                                                       "state of step {}", req->rewind_to(), step_, kept_step_));
        }
        values_ = std::move(kept_values_);
        slots_ = std::move(kept_slots_);
        step_ = kept_step_;
        kept_step_ = -1;
      }
      if (req->rewind_to() >= 0 && step_ != req->rewind_to()) {
        return rejected(fmt::format("fence: step back to {}: the ps is at step {}", req->rewind_to(), step_));
      }
      resp->set_step(step_);
      cv_.notify_all();
      return grpc::Status::OK;
    });
  }

  grpc::Status Shutdown(grpc::ServerContext*, const ps::Empty*, ps::Empty*) override {
    return guarded_rpc("parameter service shutdown", [&]() -> grpc::Status {
      std::lock_guard<std::mutex> lock(mu_);
      shutdown_requested_ = true;
      cv_.notify_all();
      return grpc::Status::OK;
    });
  }

 private:
  static grpc::Status shutting_down() {
    return {grpc::StatusCode::UNAVAILABLE, "the parameter service is shutting down"};
  }

  Clock::duration wait_of(int64_t wait_ms) const {
    return std::min<Clock::duration>(std::chrono::milliseconds(std::max<int64_t>(wait_ms, 0)), kMaxPoll);
  }

  // REQUIRES: lock holds mu_. False when stopping or still not initialized after the wait.
  bool wait_initialized(std::unique_lock<std::mutex>& lock, int64_t wait_ms) {
    cv_.wait_for(lock, wait_of(wait_ms), [&] { return stopping_ || initialized_; });
    return initialized_ && !stopping_;
  }

  // Pull (values) and Snapshot (values and slots) once the step is >= min_step.
  grpc::Status read(const ps::PullRequest& req, ps::PullResponse* resp, bool with_slots) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, wait_of(req.wait_ms()),
                 [&] { return stopping_ || (initialized_ && step_ >= req.min_step()); });
    if (stopping_) return shutting_down();
    resp->set_timeout_ms(static_cast<int64_t>(config_.timeout_secs * 1000));
    resp->set_step(step_);
    if (!initialized_) return not_initialized();
    if (step_ < req.min_step()) return grpc::Status::OK;
    resp->set_ready(true);
    for (size_t i = 0; i < shards_.size(); ++i) {
      to_proto(values_[i], resp->add_values());
      if (!with_slots) continue;
      ps::TensorList* list = resp->add_slots();
      for (const Tensor& t : slots_[i]) to_proto(t, list->add_tensors());
    }
    return grpc::Status::OK;
  }

  // One tensor per shard with the shard's shape; for the shards that are not
  // written (non-trainable for gradients, trainable for values) an empty
  // Tensor. REQUIRES: mu_ held.
  Status check_shards(const std::vector<Tensor>& ts, const char* what, bool values) const {
    if (ts.size() != shards_.size()) {
      return cluster_error(fmt::format("{} {}s for the {} shards of this ps", ts.size(), what, shards_.size()));
    }
    for (size_t i = 0; i < ts.size(); ++i) {
      bool written = shards_[i].trainable != values;
      if (!written && !ts[i].empty()) {
        return cluster_error(fmt::format("{} ({}) takes no {}", shards_[i].name,
                                         values ? "trainable" : "not trainable", what));
      }
      if (written && (ts[i].empty() || ts[i].shape() != shards_[i].shape)) {
        return cluster_error(fmt::format("the {} of {} has shape {}, the shard {}", what, shards_[i].name,
                                         ts[i].empty() ? "none" : shape_str(ts[i].shape()),
                                         shape_str(shards_[i].shape)));
      }
    }
    return {};
  }

  // Applies the update of global step step_ + 1 (1-based) to every trainable shard. REQUIRES: mu_ held.
  void apply(std::vector<Tensor>& grads, float lr) {
    keep();
    for (size_t i = 0; i < shards_.size(); ++i) {
      if (shards_[i].trainable) optimizer_->apply(step_ + 1, lr, values_[i], grads[i], slots_[i]);
    }
    ++step_;
  }

  // Elastic sync: the state before the update of step_ (a change of
  // workers may step back to it). REQUIRES: mu_ held.
  void keep() {
    if (!config_.elastic || !config_.sync) return;
    kept_step_ = step_;
    kept_values_.resize(values_.size());
    kept_slots_.resize(slots_.size());
    for (size_t i = 0; i < values_.size(); ++i) {
      if (kept_values_[i].empty() || kept_values_[i].shape() != values_[i].shape()) {
        kept_values_[i] = values_[i].clone();
      } else {
        kept_values_[i].copy_from(values_[i]);
      }
      kept_slots_[i].resize(slots_[i].size());
      for (size_t k = 0; k < slots_[i].size(); ++k) {
        if (kept_slots_[i][k].empty() || kept_slots_[i][k].shape() != slots_[i][k].shape()) {
          kept_slots_[i][k] = slots_[i][k].clone();
        } else {
          kept_slots_[i][k].copy_from(slots_[i][k]);
        }
      }
    }
  }

  // Sync: applies the current step while every worker's gradient for it has
  // arrived, summing them over the workers in tree_sum's order. REQUIRES: mu_ held.
  void apply_complete_steps() {
    for (auto it = pending_.find(step_); it != pending_.end() && it->second.count == members_;
         it = pending_.find(step_)) {
      PendingStep& p = it->second;
      if (p.skip) {
        keep();
        ++step_;
        pending_.erase(it);
        cv_.notify_all();
        continue;
      }
      auto add = [&](size_t into, size_t from) {
        for (size_t i = 0; i < p.grads[into].size(); ++i) {
          if (p.grads[into][i].empty()) continue;
          float* __restrict s = p.grads[into][i].data();
          const float* __restrict g = p.grads[from][i].data();
          for (int64_t j = 0; j < p.grads[into][i].numel(); ++j) s[j] += g[j];
        }
      };
      // After a change of workers with micro-batches: their ranges' sums
      // added as nodes of the tree over the global batch's micro-batches.
      if (bounds_.empty()) {
        tree_sum(p.grads.size(), add);
      } else {
        tree_sum_ranges(bounds_, add);
      }
      std::vector<Tensor> sum = std::move(p.grads[0]);
      apply(sum, p.lr);
      pending_.erase(it);
      cv_.notify_all();
    }
  }

  const PsConfig config_;
  const std::unique_ptr<Optimizer> optimizer_;
  const size_t num_slots_;

  std::mutex mu_;
  std::condition_variable cv_;
  bool initialized_ = false;                   // GUARDED_BY(mu_)
  std::vector<PsShard> shards_;                // GUARDED_BY(mu_)
  std::vector<Tensor> values_;                 // GUARDED_BY(mu_), per shard
  std::vector<std::vector<Tensor>> slots_;     // GUARDED_BY(mu_), per shard (none for non-trainable shards)
  int64_t step_ = 0;                           // GUARDED_BY(mu_), the global step
  std::map<int64_t, PendingStep> pending_;     // GUARDED_BY(mu_), sync: gradients by step
  // Elastic sync training: the membership generation, its workers and
  // their micro-batch ranges (Fence), and the state before the last update.
  int64_t generation_ = 0;                     // GUARDED_BY(mu_)
  int members_ = 0;                            // GUARDED_BY(mu_), set from config_.num_workers
  std::vector<size_t> bounds_;                 // GUARDED_BY(mu_)
  int64_t kept_step_ = -1;                     // GUARDED_BY(mu_)
  std::vector<Tensor> kept_values_;            // GUARDED_BY(mu_)
  std::vector<std::vector<Tensor>> kept_slots_;  // GUARDED_BY(mu_)
  bool shutdown_requested_ = false;            // GUARDED_BY(mu_)
  bool stopping_ = false;                      // GUARDED_BY(mu_)

  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
};

Result<std::unique_ptr<ParameterService>> ParameterService::start(const std::string& listen_address,
                                                                  const PsConfig& config) {
  Result<std::unique_ptr<Optimizer>> optimizer = make_optimizer(config.optimizer);
  if (!optimizer.ok()) return optimizer.error();
  if (config.num_workers < 1) {
    return cluster_error(fmt::format("the parameter service at {} needs at least one worker, not {}", listen_address,
                                     config.num_workers));
  }
  auto impl = std::make_unique<Impl>(config, std::move(*optimizer));
  Result<int> port = impl->listen(listen_address);
  if (!port.ok()) return port.error();
  return std::unique_ptr<ParameterService>(new ParameterService(std::move(impl)));
}

ParameterService::ParameterService(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

ParameterService::~ParameterService() { impl_->stop(); }

int ParameterService::port() const { return impl_->port(); }

bool ParameterService::wait_for_shutdown(std::chrono::steady_clock::time_point deadline) {
  return impl_->wait_for_shutdown(deadline);
}

}  // namespace dtrain
