// collective strategy: mirrored within a worker, Gloo ring all-reduce across workers.
#include "strategies/collective.hpp"

#include <fmt/format.h>

#include <chrono>
#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>

#include "engine/thread_errors.hpp"
#include "strategies/coordination.hpp"
#include "strategies/replica_step.hpp"
#include "strategies/tree_sum.hpp"

namespace dtrain {

CollectiveStrategy::CollectiveStrategy(Program& program, std::vector<Device> devices, double bucket_bytes,
                                       ClusterRuntime* cluster, std::unique_ptr<GlooComm> comm)
    : MirroredStrategy(program, std::move(devices), bucket_bytes,
                       // A rejoining process has no group yet: it gets one in regroup().
                       [this, multi = comm != nullptr || (cluster != nullptr && cluster->rejoining())](
                           const GradBuckets&) -> CrossReduce {
                         if (!multi) return {};
                         return [this](size_t bucket) { return reduce_bucket(bucket); };
                       }),
      cluster_(cluster),
      comm_(std::move(comm)),
      flat_(buckets_.vars.size()),
      rejoining_(comm_ == nullptr && cluster != nullptr && cluster->rejoining()) {}

Status CollectiveStrategy::reduce_bucket(size_t bucket) {
  // One all-reduce per bucket: the bucket's gradients packed contiguously.
  std::vector<float>& flat = flat_[bucket];
  ReplicaState& rs = replicas_[0];
  size_t total = 0;
  for (size_t v : buckets_.vars[bucket]) total += static_cast<size_t>(rs.grads[v].numel());
  flat.resize(total);
  size_t at = 0;
  // Gloo reduces host memory: gradients on another device are staged
  // through host copies (counted transfers).
  for (size_t v : buckets_.vars[bucket]) {
    const Tensor host = rs.grads[v].to_host();
    std::memcpy(flat.data() + at, host.data(), host.bytes());
    at += static_cast<size_t>(rs.grads[v].numel());
  }
  maybe_pause_for_test("all_reduce");
  // run.micro_batch_rows asks for one_device's grouping of the sum: the
  // workers' sums are added in tree_sum's order, not the ring's.
  if (Status s = program_.micro_batch_rows > 0 ? comm_->all_reduce_sum_ordered(flat.data(), flat.size())
                                                : comm_->all_reduce_sum(flat.data(), flat.size());
      !s) {
    return s;
  }
  at = 0;
  for (size_t v : buckets_.vars[bucket]) {
    Tensor& g = rs.grads[v];
    Tensor host = g.is_host() ? g : Tensor::empty(g.shape(), DType::f32, kHost);
    std::memcpy(host.data(), flat.data() + at, g.bytes());
    if (!g.is_host()) g.copy_from(host);
    at += static_cast<size_t>(g.numel());
  }
  return Status::Ok();
}

void CollectiveStrategy::comm_failed(const Error& e) {
  if (!elastic()) cluster_->fail_after_comm_error(e);
  if (!lost_) lost_ = e;
}

void CollectiveStrategy::sum_over_workers(std::vector<double>& values) {
  if (!comm_ || values.empty() || lost_) return;
  if (Status s = comm_->all_reduce_sum(values.data(), values.size()); !s) comm_failed(s.error());
}

bool CollectiveStrategy::any_worker(bool flag) {
  std::vector<double> v = {flag ? 1.0 : 0.0};
  sum_over_workers(v);
  return v[0] > 0;
}

StepOutput CollectiveStrategy::train_step(const Batch& batch, int64_t step, float lr) {
  if (!comm_) return MirroredStrategy::train_step(batch, step, lr);
  // The mean is over the global batch of all workers, whose last batches
  // may differ in size.
  std::vector<double> rows = {static_cast<double>(batch.size())};
  sum_over_workers(rows);
  if (lost_) return StepOutput{};  // the step is done again over the survivors
  stepped_ = true;
  StepOutput out = mirrored_step(batch, step, lr, program_.grad_scale(static_cast<int64_t>(rows[0])));
  if (auto e = reducer_->error()) {
    comm_failed(*e);
    return StepOutput{};
  }
  last_comm_ = {reducer_->cross_seconds(), reducer_->exposed_seconds()};
  // Loss and metrics over the global batch, for the chief's logs and summaries.
  std::vector<double> sums = {out.loss_sum, static_cast<double>(out.examples)};
  sums.insert(sums.end(), out.metric_state.begin(), out.metric_state.end());
  sum_over_workers(sums);
  out.loss_sum = sums[0];
  out.examples = static_cast<int64_t>(sums[1]);
  std::copy(sums.begin() + 2, sums.end(), out.metric_state.begin());
  return out;
}

Status CollectiveStrategy::sync_start(std::vector<int64_t>& values) {
  if (!comm_) return Status::Ok();
  // Every worker starts from the chief's variables, slots, step and input
  // position: the chief alone reads model_dir (other workers may not share it).
  for (Tensor* t : state_tensors(0)) {
    if (t->bytes() == 0) continue;
    Tensor host = t->to_host();  // t itself on the host; a staging copy else
    // A peer's closed connection: the coordination service names the task.
    if (Status s = comm_->broadcast(host.data(), host.bytes(), 0); !s) cluster_->fail_after_comm_error(s.error());
    if (!t->is_host()) t->copy_from(host);
  }
  if (!values.empty()) {
    if (Status s = comm_->broadcast(values.data(), values.size() * sizeof(int64_t), 0); !s) {
      cluster_->fail_after_comm_error(s.error());
    }
  }
  for (size_t r = 1; r < replicas_.size(); ++r) {
    const auto src = state_tensors(0), dst = state_tensors(r);
    for (size_t i = 0; i < src.size(); ++i) dst[i]->copy_from(*src[i]);
  }
  return Status::Ok();
}

}  // namespace dtrain

namespace dtrain {

std::vector<std::string> CollectiveStrategy::comm_report(const CommTotals& t) const {
  if (num_workers() <= 1 || t.steps <= 0) return {};
  const auto steps = static_cast<double>(t.steps);
  const double overlapped = t.seconds > 0 ? 100.0 * (1.0 - t.exposed_seconds / t.seconds) : 0.0;
  return {fmt::format("cross-worker all-reduce: {:.2f} ms per step, {:.2f} ms of it not overlapped with "
                      "backward ({:.0f}% overlapped; mean over {} steps of {:.2f} ms)",
                      1e3 * t.seconds / steps, 1e3 * t.exposed_seconds / steps, overlapped, t.steps, t.step_ms)};
}

}  // namespace dtrain

namespace dtrain {

void CollectiveStrategy::keep_state(int64_t step) {
  Kept& k = kept_[static_cast<size_t>(step % 2)];
  const std::vector<Tensor*> now = state_tensors(0);
  if (k.state.size() != now.size()) {
    k.state.clear();
    for (const Tensor* t : now) k.state.push_back(Tensor::empty(t->shape(), t->dtype(), t->device()));
  }
  for (size_t i = 0; i < now.size(); ++i) {
    if (now[i]->bytes() > 0) k.state[i].copy_from(*now[i]);
  }
  k.loss_scale = program_.loss_scale;
  k.step = step;
}

bool CollectiveStrategy::restore_kept(int64_t step, int64_t completed) {
  // The state kept at the start of the step to redo, when there is one; a
  // worker without it has not begun that step yet (it was lost in the
  // agreements after the step before, whose result it holds).
  const Kept& k = kept_[static_cast<size_t>(step % 2)];
  if (k.step != step) return step == completed;
  for (size_t rep = 0; rep < replicas_.size(); ++rep) {
    const std::vector<Tensor*> dst = state_tensors(rep);
    for (size_t i = 0; i < dst.size(); ++i) {
      if (dst[i]->bytes() > 0) dst[i]->copy_from(k.state[i]);
    }
  }
  program_.loss_scale = k.loss_scale;
  return true;
}

Status CollectiveStrategy::broadcast_state(std::vector<int64_t>& values) {
  for (Tensor* t : state_tensors(0)) {
    if (t->bytes() == 0) continue;
    Tensor host = t->to_host();
    if (Status s = comm_->broadcast(host.data(), host.bytes(), 0); !s) return s;
    if (!t->is_host()) t->copy_from(host);
  }
  if (Status s = comm_->broadcast(values.data(), values.size() * sizeof(int64_t), 0); !s) return s;
  for (size_t r = 1; r < replicas_.size(); ++r) {
    const auto src = state_tensors(0), dst = state_tensors(r);
    for (size_t i = 0; i < src.size(); ++i) dst[i]->copy_from(*src[i]);
  }
  return Status::Ok();
}

Result<CollectiveStrategy::Regrouped> CollectiveStrategy::regroup(int64_t completed, int64_t global_rows,
                                                                  const std::function<int64_t(int64_t)>& position_at) {
  Regrouped r;
  const bool joining = completed == kJoining;
  r.workers_before = comm_ ? comm_->size() : 0;
  // The communication thread releases the step's remaining buckets at once
  // after a failure; it must be idle before its communicator goes.
  if (stepped_) {
    try {
      reducer_->wait_all(0);
    } catch (const ErrorException&) {
    }
  }
  for (;;) {
    // Closing this worker's connections ends the collectives the other
    // survivors may still wait in for it.
    comm_.reset();
    auto m = cluster_->next_membership();
    if (!m) {
      return cluster_error(fmt::format("{}; no new membership followed it: {}", lost_ ? lost_->message : "",
                                       m.error().message));
    }
    r.changes.insert(r.changes.end(), m->reasons.begin(), m->reasons.end());
    auto c = GlooComm::create(cluster_->client(), m->rank, static_cast<int>(m->tasks.size()), cluster_->bind_host(),
                              cluster_->timeout_secs(), fmt::format("collective/gloo/{}/", m->generation),
                              [this] { return cluster_->membership_superseded(); });
    if (!c) {
      if (cluster_->membership_superseded()) continue;  // another task lost meanwhile
      return c.error();
    }
    comm_ = std::move(*c);
    // The survivors may be one step apart (the last collective of a step
    // completes on some ranks only): every one redoes from the earliest. A
    // joining process has no step of its own (it takes rank 0's).
    constexpr double kNoStep = 1e18;
    std::vector<double> done(static_cast<size_t>(comm_->size()), 0.0);
    done[static_cast<size_t>(comm_->rank())] = joining ? kNoStep : static_cast<double>(completed);
    if (Status s = comm_->all_reduce_sum(done.data(), done.size()); !s) {
      if (cluster_->membership_superseded()) continue;
      return s.error();
    }
    r.redo_step = static_cast<int64_t>(*std::min_element(done.begin(), done.end()));
    const bool anyone_joins = std::find(done.begin(), done.end(), kNoStep) != done.end();
    if (anyone_joins && !joining && !restore_kept(r.redo_step, completed)) {
      return cluster_error(fmt::format("elastic: the group redoes step {}, whose state this worker (at step {}) no "
                                       "longer holds",
                                       r.redo_step, completed));
    }
    if (anyone_joins) {
      // The joining process gets rank 0's state at the step to redo, and
      // its input position there.
      std::vector<int64_t> values = {r.redo_step, position_at ? position_at(r.redo_step) : -1,
                                     program_.loss_scale.good_steps(),
                                     std::bit_cast<int64_t>(program_.loss_scale.scale()), global_rows};
      if (Status s = broadcast_state(values); !s) {
        if (cluster_->membership_superseded()) continue;
        return s.error();
      }
      if (joining) {
        r.input_position = values[1];
        program_.loss_scale.restore(std::bit_cast<double>(values[3]), values[2]);
        global_rows = values[4];
        r.global_rows = global_rows;
      }
    }
    r.restored = anyone_joins;
    break;
  }
  if (!r.restored && !restore_kept(r.redo_step, completed)) {
    return cluster_error(fmt::format("elastic: the survivors redo step {}, whose state this worker (at step {}) no "
                                     "longer holds",
                                     r.redo_step, completed));
  }
  lost_.reset();
  rejoining_ = false;
  r.workers = comm_->size();
  r.rank = comm_->rank();
  // The survivors' rows. With run.micro_batch_rows, whole micro-batches in
  // ranges that are nodes of the tree over the global batch's micro-batches
  // (tree_parts), added across the workers in that tree's order: the sums
  // keep the grouping of one_device, and of the run before the loss, when
  // its shares were a power of two of them. Else as even as the rows allow.
  ElasticSplit split = elastic_split(global_rows, static_cast<size_t>(r.workers), program_.micro_batch_rows);
  r.row_cuts = std::move(split.row_cuts);
  if (!split.bounds.empty()) comm_->set_ordered_parts(std::move(split.bounds));
  return r;
}

}  // namespace dtrain
