// parameter_server strategy, worker side: pull, towers step, push.
#include "strategies/parameter_server.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cinttypes>
#include <chrono>
#include <cstdio>
#include <future>
#include <optional>
#include <thread>

#include "engine/io/checkpoint.hpp"
#include "strategies/all_reduce.hpp"
#include "strategies/replica_step.hpp"
#include "strategies/rpc_time.hpp"
#include "strategies/tree_sum.hpp"

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
                                                 std::vector<std::unique_ptr<PsClient>> ps, bool sync,
                                                 std::string model_dir)
    : ReplicatedStrategy(program, std::move(devices)),
      cluster_(cluster),
      placement_(std::move(placement)),
      ps_(std::move(ps)),
      sync_(sync),
      model_dir_(std::move(model_dir)),
      elastic_(sync && cluster.elastic()),
      rank_(cluster.rank()),
      workers_(cluster.size()) {
  for (int w = 0; w < workers_; ++w) member_ranks_.push_back(w);
  if (elastic_) {
    // A step that a lost worker never pushes is given up once the service
    // posts the next membership.
    for (auto& c : ps_) c->set_abandon([this] { return cluster_.membership_superseded(); });
  }
}

Status ParameterServerStrategy::create_variables() {
  // The local cache of the ps' variables is on the host (pulls and pushes
  // travel through it); replicas on other devices get private copies.
  variable_ctx_.device = kHost;
  if (Status s = initialize_variables(program_, kHost, values_, slots_); !s) return s;
  share_one_copy(values_);
  return Status::Ok();
}

void ParameterServerStrategy::fail(const Error& e) { cluster_.fail_after_comm_error(e); }

void ParameterServerStrategy::failed(const Error& e) {
  if (elastic_) {
    // A lost worker: its step never completes (a pull or an agreement gives
    // up), or a ps fenced for the next group refuses this push. The
    // membership reaches this task within moments of the service's post.
    const double heartbeat = rpc_time::default_heartbeat_secs(cluster_.timeout_secs());
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::milliseconds(static_cast<int64_t>((3 * heartbeat + 3) * 1000));
    while (!cluster_.membership_superseded() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (cluster_.membership_superseded()) {
      if (!lost_) lost_ = e;
      return;
    }
  }
  fail(e);
}

std::string ParameterServerStrategy::agreement_name() {
  // Before any change of workers the names are those of every earlier dtrain.
  return generation_ == 0 ? fmt::format("ps/any_worker/{}", agreements_++)
                          : fmt::format("ps/any_worker/{}/{}", generation_, agreements_++);
}

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
    if (!snap) {
      // Elastic: the step will be redone; the estimator saves nothing now.
      failed(snap.error());
      continue;
    }
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

Status ParameterServerStrategy::init_ps(int64_t step) {
  const auto& vars = program_.model->variables();
  std::vector<std::future<Status>> inits;
  for (size_t t = 0; t < ps_.size(); ++t) {
    std::vector<PsShard> shards;
    PsState state;
    state.step = step;
    for (size_t i : placement_.by_ps[t]) {
      const PsPiece& piece = placement_.pieces[i];
      Tensor v = piece_of(values_[piece.var], piece);
      shards.push_back({vars[piece.var].name, piece.row_begin, piece.row_end, v.shape(), vars[piece.var].trainable});
      state.values.push_back(v.clone());
      std::vector<Tensor> s;
      for (Tensor& slot : slots_[piece.var]) s.push_back(piece_of(slot, piece).clone());
      state.slots.push_back(std::move(s));
    }
    inits.push_back(std::async(std::launch::async, [c = ps_[t].get(), shards = std::move(shards),
                                                    state = std::move(state)] { return c->init(shards, state); }));
  }
  Status out = Status::Ok();
  for (auto& f : inits) {
    if (Status s = f.get(); !s && out) out = s;
  }
  return out;
}

Status ParameterServerStrategy::reload_ps(int64_t& step, int64_t& position, std::string& from) {
  const std::optional<std::string> latest = latest_checkpoint(model_dir_);
  if (!latest) {
    return cluster_error(fmt::format("elastic: a ps task started again holds nothing, and {} has no checkpoint to "
                                     "reload the ps tasks from",
                                     model_dir_));
  }
  auto ckpt = load_checkpoint(*latest);
  if (!ckpt) return ckpt.error();
  if (Status s = restore(*ckpt); !s) return s;
  step = ckpt->global_step;
  auto it = ckpt->metadata.find("input_position");
  position = it == ckpt->metadata.end() ? 0 : std::stoll(it->second);
  from = *latest;
  return init_ps(step);
}

Status ParameterServerStrategy::sync_start(std::vector<int64_t>& values) {
  // The chief initialises every ps from its variables (a restored checkpoint,
  // or the seeded initial values) and publishes where training starts.
  CoordinationClient& coord = cluster_.client();
  if (is_chief()) {
    if (Status s = init_ps(values[0]); !s) return s;
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
    if (!got) {
      failed(got.error());
      continue;
    }
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
  if (lost_) return {};  // elastic: the group changed; the step is redone over the new one
  double rpc = seconds_since(t0);
  refresh_private_copies(values_);
  // sync: the mean is over the global batch of every worker (equal batches);
  // async: each push is one worker's own mean.
  const float scale =
      program_.grad_scale(!sync_ ? batch.size() : global_rows_ > 0 ? global_rows_ : batch.size() * num_workers());
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
      return ps_[t]->push(worker_index(), push_step, lr, g, skip, generation_);
    }));
  }
  for (auto& f : pushes) {
    if (Status s = f.get(); !s) failed(s.error());
  }
  if (lost_) return {};
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
    std::vector<std::string> back;
    for (const std::string& label : service->returned_observers()) {
      if (label.rfind("worker ", 0) == 0) back.push_back(label);
    }
    const size_t alive = static_cast<size_t>(num_workers()) - dead.size() + back.size();
    for (; reported_dead_ < dead.size(); ++reported_dead_) {
      std::fprintf(stderr,
                   "dtrain: %s is gone (its process ended, or it hung and sent no heartbeat); training goes on "
                   "with %zu of %d workers; an update it had in flight is lost (a push that reached only some ps "
                   "tasks is applied on those)\n",
                   dead[reported_dead_].c_str(), alive, num_workers());
    }
    for (; reported_back_ < back.size(); ++reported_back_) {
      std::fprintf(stderr,
                   "dtrain: %s started again and trains with the others (%zu of %d workers): it pulls the current "
                   "variables, and its input starts where this run started\n",
                   back[reported_back_].c_str(), alive, num_workers());
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
  std::function<bool()> abandon;
  if (elastic_) abandon = [this] { return cluster_.membership_superseded(); };
  auto any = cluster_.client().agree(agreement_name(), flag, num_workers(), abandon);
  if (!any) {
    failed(any.error());
    return flag;
  }
  return *any;
}

Status ParameterServerStrategy::finish_training() {
  CoordinationClient& coord = cluster_.client();
  if (!is_chief()) return coord.set(fmt::format("ps/worker_done/{}", cluster_.rank()), "1");
  // The ps tasks stop once every worker is done with them (a worker that
  // died in async mode is waited for at most timeout_secs).
  // Elastic: the workers of the last group (a lost one reports nothing).
  for (int w : member_ranks_) {
    if (w == cluster_.rank()) continue;
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

Result<ParameterServerStrategy::Regrouped> ParameterServerStrategy::regroup(
    int64_t completed, int64_t global_rows, const std::function<int64_t(int64_t)>& position_at) {
  Regrouped r;
  const bool joining = completed == kJoining;
  r.workers_before = joining ? 0 : workers_;
  CoordinationClient& coord = cluster_.client();
  const auto timeout = std::chrono::milliseconds(static_cast<int64_t>(cluster_.timeout_secs() * 1000));
  int64_t redo = -1, position = -1;  // the step the group redoes, and the input position there (rank 0's)
  bool rolled_back = false;          // to the latest checkpoint (a ps task started again)
  for (;;) {
    auto m = cluster_.next_membership();
    if (!m) {
      return cluster_error(fmt::format("{}; no new membership followed it: {}", lost_ ? lost_->message : "",
                                       m.error().message));
    }
    r.changes.insert(r.changes.end(), m->reasons.begin(), m->reasons.end());
    const int n = static_cast<int>(m->tasks.size());
    ElasticSplit split = elastic_split(global_rows, static_cast<size_t>(n), program_.micro_batch_rows);
    // The group's rank 0 (the chief: its loss stops the cluster) fences every
    // ps at the new generation: from then on no update of the old group
    // lands, and the steps the ps are at stay as they are until the new
    // group pushes. They are at most one update apart (an update needs every
    // worker's push, and a worker pushes step s + 1 only once it pulled the
    // values of step s from every ps): the group redoes the lowest step, and
    // the ps one update past it step back to the state they kept.
    // A ps task lost and started again holds nothing: every ps is loaded
    // from the latest checkpoint, and the group goes back to its step (at
    // its input position, for every worker).
    const std::string key = fmt::format("elastic/ps/{}", m->generation);
    if (m->rank == 0) {
      std::vector<std::future<Result<int64_t>>> fences;
      for (auto& c : ps_) {
        fences.push_back(std::async(std::launch::async, [&, c = c.get()] {
          return c->fence(m->generation, n, split.bounds, -1);
        }));
      }
      std::vector<int64_t> steps;
      std::optional<Error> error;
      for (auto& f : fences) {
        auto step = f.get();
        if (!step && !error) error = step.error();
        steps.push_back(step ? *step : -1);
      }
      const bool empty = std::find(steps.begin(), steps.end(), PsClient::kHoldsNothing) != steps.end();
      if (!error && empty) {
        std::string from;
        if (Status s = reload_ps(redo, position, from); !s) {
          error = s.error();
        } else {
          rolled_back = true;
          std::vector<std::string> restarted;
          for (size_t t = 0; t < ps_.size(); ++t) {
            if (steps[t] == PsClient::kHoldsNothing) restarted.push_back(fmt::format("ps {}", t));
          }
          r.changes.push_back(fmt::format("{} started again; every ps was loaded from {}", fmt::join(restarted, ", "),
                                          from));
          for (size_t t = 0; t < ps_.size() && !error; ++t) {
            if (auto f = ps_[t]->fence(m->generation, n, split.bounds, -1); !f) error = f.error();
          }
        }
      } else if (!error) {
        redo = *std::min_element(steps.begin(), steps.end());
        for (size_t t = 0; t < ps_.size() && !error; ++t) {
          if (steps[t] == redo) continue;
          if (auto back = ps_[t]->fence(m->generation, n, split.bounds, redo); !back) error = back.error();
        }
      }
      if (error) {
        if (cluster_.membership_superseded()) continue;
        return *error;
      }
      if (!rolled_back) position = position_at ? position_at(redo) : -1;
      if (Status s = coord.set(key, fmt::format("{} {} {}", redo, position, rolled_back ? 1 : 0)); !s) {
        return s.error();
      }
    } else {
      const auto deadline = std::chrono::steady_clock::now() + timeout;
      bool superseded = false;
      for (;;) {
        if (auto v = coord.get(key, std::chrono::milliseconds(200)); v.ok()) {
          int back = 0;
          if (std::sscanf(v->c_str(), "%" SCNd64 " %" SCNd64 " %d", &redo, &position, &back) != 3) {
            return cluster_error(fmt::format("elastic: rank 0's answer for membership {} is \"{}\"", m->generation,
                                             *v));
          }
          rolled_back = back != 0;
          break;
        }
        if ((superseded = cluster_.membership_superseded())) break;
        if (std::chrono::steady_clock::now() >= deadline) {
          return cluster_error(fmt::format("elastic: the group's rank 0 ({}) did not fence the ps tasks for "
                                           "membership {} within {} s",
                                           m->tasks[0].label(), m->generation, cluster_.timeout_secs()));
        }
      }
      if (superseded) continue;
    }
    rank_ = m->rank;
    workers_ = n;
    generation_ = m->generation;
    member_ranks_.clear();
    for (const CoordTask& t : m->tasks) {
      const auto& all = cluster_.training_tasks();
      for (size_t k = 0; k < all.size(); ++k) {
        if (all[k].id() == t.id()) member_ranks_.push_back(static_cast<int>(k));
      }
    }
    break;
  }
  global_rows_ = global_rows;
  agreements_ = 0;
  seen_step_ = snapshot_step_ = redo;
  lost_.reset();
  r.redo_step = redo;
  r.input_position = joining || rolled_back ? position : -1;
  if (rolled_back) r.redo_why = "the latest checkpoint, which every ps was loaded from";
  r.workers = workers_;
  r.rank = rank_;
  r.row_cuts = elastic_split(global_rows, static_cast<size_t>(workers_), program_.micro_batch_rows).row_cuts;
  r.restored = true;  // the state is on the ps, at the step to redo
  return r;
}

}  // namespace dtrain
