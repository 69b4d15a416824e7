// parameter_server strategy, worker side: pull, towers step, push.
#include "strategies/parameter_server.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <future>
#include <optional>

#include "strategies/all_reduce.hpp"
#include "strategies/replica_step.hpp"

namespace dtrain {
namespace {

// The rows of `t` that `piece` covers (a view sharing t's storage).
Tensor piece_of(Tensor& t, const PsPiece& piece) {
  return t.shape().empty() ? t : t.rows(piece.row_begin, piece.row_end);
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

ParameterServerStrategy::ParameterServerStrategy(Program& program, std::vector<Device> devices,
                                                 ClusterRuntime& cluster, PsPlacement placement,
                                                 std::vector<std::unique_ptr<PsClient>> ps, bool sync)
    : ReplicatedStrategy(program, std::move(devices)),
      cluster_(cluster),
      placement_(std::move(placement)),
      ps_(std::move(ps)),
      sync_(sync) {}

Status ParameterServerStrategy::create_variables() {
  // The local cache of the ps' variables is on the host (pulls and pushes
  // travel through it); replicas on other devices get private copies.
  variable_ctx_.device = kHost;
  if (Status s = initialize_variables(program_, kHost, values_, slots_); !s) return s;
  share_one_copy(values_);
  return Status::Ok();
}

void ParameterServerStrategy::fail(const Error& e) { cluster_.fail_after_comm_error(e); }

Status ParameterServerStrategy::restore(const CheckpointData& ckpt) {
  if (Status s = assign_state(program_, ckpt, values_, slots_); !s) return s;
  refresh_private_copies(values_);
  return Status::Ok();
}

std::vector<std::pair<std::string, Tensor>> ParameterServerStrategy::logical_state() {
  // A consistent snapshot: in sync mode every ps is at the step just trained.
  std::vector<std::future<Result<PsState>>> snaps;
  for (auto& client : ps_) {
    snaps.push_back(std::async(std::launch::async, [&, c = client.get()] { return c->snapshot(snapshot_step_); }));
  }
  for (size_t t = 0; t < ps_.size(); ++t) {
    auto snap = snaps[t].get();
    if (!snap) fail(snap.error());
    const auto& mine = placement_.by_ps[t];
    for (size_t k = 0; k < mine.size(); ++k) {
      const PsPiece& piece = placement_.pieces[mine[k]];
      piece_of(values_[piece.var], piece).copy_from(snap->values[k]);
      for (size_t j = 0; j < slots_[piece.var].size() && j < snap->slots[k].size(); ++j) {
        piece_of(slots_[piece.var][j], piece).copy_from(snap->slots[k][j]);
      }
    }
  }
  return state_list(program_, values_, slots_);
}

Status ParameterServerStrategy::sync_start(std::vector<int64_t>& values) {
  // The chief initialises every ps from its variables (a restored checkpoint,
  // or the seeded initial values) and publishes where training starts.
  CoordinationClient& coord = cluster_.client();
  const auto& vars = program_.model->variables();
  if (is_chief()) {
    for (size_t t = 0; t < ps_.size(); ++t) {
      std::vector<PsShard> shards;
      PsState state;
      state.step = values[0];
      for (size_t i : placement_.by_ps[t]) {
        const PsPiece& piece = placement_.pieces[i];
        Tensor v = piece_of(values_[piece.var], piece);
        shards.push_back({vars[piece.var].name, piece.row_begin, piece.row_end, v.shape(), vars[piece.var].trainable});
        state.values.push_back(v.clone());
        std::vector<Tensor> s;
        for (Tensor& slot : slots_[piece.var]) s.push_back(piece_of(slot, piece).clone());
        state.slots.push_back(std::move(s));
      }
      if (Status s = ps_[t]->init(shards, state); !s) return s;
    }
    if (Status s = coord.set("ps/start", fmt::format("{} {}", values[0], values[1])); !s) return s;
  } else {
    auto start = coord.get("ps/start");
    if (!start) return start.error();
    const size_t space = start->find(' ');
    values[0] = std::stoll(start->substr(0, space));
    values[1] = std::stoll(start->substr(space + 1));
  }
  seen_step_ = snapshot_step_ = values[0];
  return Status::Ok();
}

int64_t ParameterServerStrategy::pull_all(int64_t min_step) {
  std::vector<std::future<Result<PsState>>> pulls;
  for (auto& client : ps_) {
    pulls.push_back(std::async(std::launch::async, [c = client.get(), min_step] { return c->pull(min_step); }));
  }
  int64_t step = 0;
  for (size_t t = 0; t < ps_.size(); ++t) {
    auto got = pulls[t].get();
    if (!got) fail(got.error());
    step = std::max(step, got->step);
    const auto& mine = placement_.by_ps[t];
    for (size_t k = 0; k < mine.size(); ++k) {
      const PsPiece& piece = placement_.pieces[mine[k]];
      piece_of(values_[piece.var], piece).copy_from(got->values[k]);
    }
  }
  return step;
}

StepOutput ParameterServerStrategy::train_step(const Batch& batch, int64_t step, float lr) {
  const auto t0 = std::chrono::steady_clock::now();
  {
    const ProfileScope profile(program_.profiler, "ps", "pull");
    seen_step_ = pull_all(sync_ ? step : 0);
  }
  double rpc = seconds_since(t0);
  refresh_private_copies(values_);
  // sync: the mean is over the global batch of every worker (equal batches);
  // async: each push is one worker's own mean.
  const float scale = program_.grad_scale(sync_ ? batch.size() * num_workers() : batch.size());
  const auto outs = on_shards(batch.size(), [&](int r, int64_t begin, int64_t end) {
    ReplicaState& rs = replicas_[static_cast<size_t>(r)];
    if (end <= begin) {
      for (Tensor& g : rs.grads) {
        if (!g.empty()) g.zero();
      }
      return run_replica(program_, rs, batch, begin, end, step, true, scale);
    }
    return run_replica_accumulated(program_, rs, batch, begin, end, step, scale);
  });
  const auto& vars = program_.model->variables();
  std::vector<size_t> trainable;
  for (size_t i = 0; i < vars.size(); ++i) {
    if (vars[i].trainable) trainable.push_back(i);
  }
  std::span<Tensor> summed = reduce_to_variables(trainable);
  std::vector<Tensor*> grads;
  for (size_t i : trainable) grads.push_back(&summed[i]);
  // Clipping by global norm happens on each worker's gradient before the push
  // (the ps see only their shards).
  // Mixed precision: a worker whose gradient is not finite tells every ps
  // to skip the update; the ps agree because each hears every worker.
  const bool skip = program_.mixed() && !grads_finite(program_, variable_ctx_, summed);
  if (program_.optimizer_spec.clip_by_global_norm && !skip) {
    clip_by_global_norm(grads, *program_.optimizer_spec.clip_by_global_norm, variable_ctx_);
  }

  const auto t1 = std::chrono::steady_clock::now();
  // The push (the ps apply the optimizer; sync: once every worker pushed).
  std::optional<ProfileScope> push_scope;
  if (program_.profiler) push_scope.emplace(program_.profiler, "ps", "push");
  const int64_t push_step = sync_ ? step : seen_step_;
  std::vector<std::future<Status>> pushes;
  for (size_t t = 0; t < ps_.size(); ++t) {
    std::vector<Tensor> g, nontrainable;
    for (size_t i : placement_.by_ps[t]) {
      const PsPiece& piece = placement_.pieces[i];
      if (vars[piece.var].trainable) {
        g.push_back(piece_of(summed[piece.var], piece).clone());
      } else {
        g.emplace_back();
        nontrainable.push_back(piece_of(values_[piece.var], piece).clone());
      }
    }
    pushes.push_back(std::async(std::launch::async, [&, t, g = std::move(g), nt = std::move(nontrainable)] {
      // batch_norm's moving statistics: the chief's are the ones kept.
      if (!nt.empty() && is_chief()) {
        if (Status s = ps_[t]->push_values(nt); !s) return s;
      }
      return ps_[t]->push(worker_index(), push_step, lr, g, skip);
    }));
  }
  for (auto& f : pushes) {
    if (Status s = f.get(); !s) fail(s.error());
  }
  push_scope.reset();
  rpc += seconds_since(t1);
  last_rpc_seconds_ = rpc;
  // This worker's own flag (with float16's dynamic scale on GPU workers the
  // flags of all workers would have to be shared; bfloat16's scale is 1).
  program_.loss_scale.update(!skip);
  // async: a worker that died does not stop the others; the chief says so.
  if (const CoordinationService* service = cluster_.service(); service && !sync_) {
    std::vector<std::string> dead;  // workers only: the evaluator is an observer too
    for (const std::string& label : service->dead_observers()) {
      if (label.rfind("worker ", 0) == 0) dead.push_back(label);
    }
    for (; reported_dead_ < dead.size(); ++reported_dead_) {
      std::fprintf(stderr,
                   "dtrain: %s is gone (its process ended, or it hung and sent no heartbeat); training goes on "
                   "with %zu of %d workers\n", dead[reported_dead_].c_str(), static_cast<size_t>(num_workers()) - dead.size(),
                   num_workers());
    }
  }
  // sync: the state after this step's update (applied once every worker pushed).
  snapshot_step_ = sync_ ? step + 1 : 0;
  return sum_outputs(outs);
}

int64_t ParameterServerStrategy::global_step_after(int64_t step) const {
  return sync_ ? step + 1 : std::max(step + 1, seen_step_ + 1);
}

std::string ParameterServerStrategy::describe() const {
  std::vector<std::string> addresses;
  for (const auto& [type, list] : cluster_.resolved().cluster.tasks) {
    if (type == "ps") addresses = list;
  }
  return fmt::format("parameter_server mode {}: {} worker(s), {} ps task(s); ", sync_ ? "sync" : "async",
                     num_workers(), ps_.size()) +
         format_placement(placement_, program_.model->variables(), addresses);
}

bool ParameterServerStrategy::any_worker(bool flag) {
  if (!sync_ || num_workers() <= 1) return flag;
  // Every worker calls any_worker in the same order (the training loop's
  // decisions are the agreed ones), so the n-th call of each is one agreement.
  auto any = cluster_.client().agree(fmt::format("ps/any_worker/{}", agreements_++), flag, num_workers());
  if (!any) fail(any.error());
  return *any;
}

Status ParameterServerStrategy::finish_training() {
  CoordinationClient& coord = cluster_.client();
  if (!is_chief()) return coord.set(fmt::format("ps/worker_done/{}", worker_index()), "1");
  // The ps tasks stop once every worker is done with them (a worker that
  // died in async mode is waited for at most timeout_secs).
  for (int w = 0; w < num_workers(); ++w) {
    if (w == worker_index()) continue;
    if (auto done = coord.get(fmt::format("ps/worker_done/{}", w)); !done) {
      std::fprintf(stderr, "dtrain: %s did not report the end of its training (%s); stopping the ps tasks\n",
                   cluster_.training_tasks()[static_cast<size_t>(w)].label().c_str(), done.error().message.c_str());
    }
  }
  for (auto& client : ps_) {
    if (Status s = client->shutdown(); !s) return s;
  }
  return Status::Ok();
}

std::vector<std::string> ParameterServerStrategy::comm_report(const CommTotals& t) const {
  if (t.steps <= 0) return {};
  const auto steps = static_cast<double>(t.steps);
  return {fmt::format("ps RPCs (pull and push): {:.2f} ms per step of {:.2f} ms (mean over {} steps)",
                      1e3 * t.seconds / steps, t.step_ms, t.steps),
          fmt::format("parameter servers: this worker pulled {} B and pushed {} B per step (tensor payloads)",
                      bytes_pulled() / t.steps, bytes_pushed() / t.steps)};
}

int64_t ParameterServerStrategy::bytes_pulled() const {
  int64_t n = 0;
  for (const auto& c : ps_) n += c->bytes_received();
  return n;
}

int64_t ParameterServerStrategy::bytes_pushed() const {
  int64_t n = 0;
  for (const auto& c : ps_) n += c->bytes_sent();
  return n;
}

}  // namespace dtrain
