// The training loop: restore, then step -> hooks (log, summaries, NaN guard,
// checkpoint, evaluation) until max_steps or a stop signal.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <optional>

#include "datasets/pipeline.hpp"
#include "engine/io/file_util.hpp"
#include "engine/losses/label_check.hpp"
#include "engine/optim/optimizer.hpp"
#include "estimator/accumulation.hpp"
#include "estimator/early_stopping.hpp"
#include "estimator/estimator.hpp"
#include "estimator/model_outputs.hpp"
#include "estimator/profile_report.hpp"
#include "estimator/stop_signals.hpp"
#include "estimator/warm_start.hpp"
#include "strategies/cluster_runtime.hpp"
#include "strategies/replica_step.hpp"

namespace dtrain {

namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

Status write_text_file(const fs::path& path, const std::string& text) {
  return io::write_file_atomic(path.string(), {text});
}

}  // namespace

Status Estimator::warm_start() {
  auto ws = make_warm_start(*job_.run.warm_start, program_);
  if (!ws) return ws.error();
  if (Status s = strategy_->restore(ws->state); !s) return s;
  global_step_ = 0;
  restored_input_position_ = 0;
  warm_started_ = true;
  const bool slots = job_.run.warm_start->slots;
  log_.info(fmt::format("warm start from {}: copied {} of {} variables{}: {}", ws->checkpoint, ws->copied.size(),
                        program_.model->variables().size(),
                        slots ? " with their optimizer slots" : " (optimizer slots start fresh)",
                        fmt::join(ws->copied, ", ")));
  if (const size_t n = ws->not_filled.size(); n > 0) {
    log_.info(fmt::format("warm start: {} variable{} not filled, initialised by {}: {}", n, n == 1 ? "" : "s",
                          n == 1 ? "its initializer" : "their initializers", fmt::join(ws->not_filled, ", ")));
  }
  if (!ws->fresh_slots.empty()) {
    log_.info(fmt::format("warm start: optimizer slots not in the checkpoint start fresh: {}",
                          fmt::join(ws->fresh_slots, ", ")));
  }
  return Status::Ok();
}

Status Estimator::stop_before_first_step(bool multi_worker, bool chief) {
  const int local_sig = received_stop_signal();
  if (!(multi_worker ? strategy_->any_worker(local_sig != 0) : local_sig != 0)) return Status::Ok();
  const int own = local_sig ? local_sig : received_stop_signal();
  const bool usr1 = own == SIGUSR1;
  stopped_by_requeue_signal_ = multi_worker ? strategy_->any_worker(usr1) : usr1;
  log_.end_progress();
  if (chief && stopped_by_requeue_signal_ && options_.on_requeue_signal) {
    auto [message, warning] = options_.on_requeue_signal(
        last_checkpoint_.empty() ? std::string("the start (no checkpoint yet)") : last_checkpoint_);
    if (warning) {
      log_.warning(message);
    } else if (!message.empty()) {
      log_.info(message);
    }
  }
  if (multi_worker) strategy_->any_worker(false);  // the others leave once the chief is done, as after a step
  // The ps tasks are stopped as at the end of training (they keep serving through a stop signal).
  if (Status s = strategy_->finish_training(); !s) return s;
  const std::string from =
      last_checkpoint_.empty() ? std::string("nothing was trained or written")
                               : fmt::format("nothing was trained; {} is unchanged", last_checkpoint_);
  if (own == 0) {
    return Error{ErrorKind::kStopped,
                 fmt::format("stopped before training started (step {}) because another task of the cluster "
                             "received a stop signal; {}; run the same command to continue",
                             global_step_, from)};
  }
  return Error{ErrorKind::kStopped,
               fmt::format("stopped by {} before training started (step {}; the signal came while the job "
                           "started up); {}; run the same command to continue",
                           stop_signal_name(own), global_step_, from)};
}

Status Estimator::train(bool evaluate_during) {
  const RunSpec& run = job_.run;
  if (!job_.data.train) return config_error(fmt::format("{}: data.train: required for training", job_.source_path));
  // In a cluster only the chief reads and writes model_dir; the others get
  // its state through the strategy (they may not even share the directory).
  const bool chief = strategy_->is_chief();
  const bool multi_worker = strategy_->num_workers() > 1;
  std::error_code ec;
  if (chief) {
    fs::create_directories(run.model_dir, ec);
    if (ec) return runtime_error(fmt::format("cannot create model_dir {}: {}", run.model_dir, ec.message()));
    // What killed writers (checkpoints, the index, summaries' metrics) left behind.
    for (const fs::path& dir : {fs::path(run.model_dir), fs::path(run.model_dir) / "eval"}) {
      const std::vector<std::string> stale = io::remove_stale_temporaries(dir.string());
      if (stale.empty()) continue;
      log_.info(fmt::format("removed {} temporary file{} in {} left by writers no longer running: {}", stale.size(),
                            stale.size() == 1 ? "" : "s", dir.string(), fmt::join(stale, ", ")));
    }
    if (Status s = write_text_file(fs::path(run.model_dir) / "job.resolved.yaml", job_.resolved_yaml); !s) return s;
  }

  // Token ids of text data never change under a model: checked before anything is restored.
  if (Status s = prepare_training_vocabulary(chief); !s) return s;

  if (auto latest = chief ? latest_checkpoint(run.model_dir) : std::nullopt) {
    auto ckpt = read_compatible_checkpoint(*latest);
    if (!ckpt) return ckpt.error();
    if (auto it = ckpt->metadata.find("model_hash"); it != ckpt->metadata.end() && it->second != job_.model_hash) {
      log_.warning(fmt::format("{} was written by a job whose model section differs (same variables); resuming",
                               *latest));
    }
    if (Status s = restore_from(*ckpt); !s) return s;
    last_checkpoint_ = *latest;
    log_.info(fmt::format("resuming from {} at step {}", *latest, global_step_));
  } else if (chief && run.warm_start) {
    if (Status s = warm_start(); !s) return s;
  }

  // eval.early_stopping: the chief continues the history of model_dir/eval.
  const fs::path eval_dir = fs::path(run.model_dir) / "eval";
  std::optional<EarlyStopping> early;
  if (job_.eval.early_stopping && evaluate_during && job_.data.eval) {
    early.emplace(*job_.eval.early_stopping);
    if (chief) {
      if (Status s = early->replay(eval_dir.string(), global_step_); !s) return s;
    }
  }
  bool stopped_before = early && early->stopped();

  if (options_.cluster) {
    std::vector<int64_t> start_state = {global_step_, restored_input_position_, stopped_before ? 1 : 0};
    if (Status s = strategy_->sync_start(start_state); !s) return s;
    if (!chief && start_state[0] > 0) log_.info(fmt::format("starting at the chief's step {}", start_state[0]));
    global_step_ = start_state[0];
    restored_input_position_ = start_state[1];
    stopped_before = start_state[2] != 0;
  }
  // The warm-started state is the run's step 0: saved, so that it can be
  // inspected and a restart before the first save does not copy again.
  if (warm_started_ && chief) {
    if (Status s = save(0); !s) return s;
  }

  const DataSourceSpec& train_spec = *job_.data.train;
  auto batch = global_batch(train_spec, "train");
  if (!batch) return batch.error();
  if (Status s = check_accumulation(job_, *batch, strategy_->num_replicas()); !s) return s;
  // run.profile: only the chief writes the trace; every task prints its
  // table. Made before the input, whose prefetch thread may record into it.
  ProfileWindow profile(run.profile, chief ? (fs::path(run.model_dir) / "profile").string() : std::string());
  auto input = open_input(train_spec, "train", *batch, vocabulary_, true);
  if (!input) return input.error();
  // A streaming input continues from its saved state; without one (a worker
  // other than the chief, an older checkpoint) it replays the batches' records.
  if (Status s = (*input)->restore_state(restored_input_position_, chief ? restored_input_state_ : ""); !s) return s;

  log_threads();
  const int replicas = strategy_->num_replicas();
  const std::string split = fmt::format("{} = {} replica(s) x {}{}", *batch, replicas, *batch / replicas,
                                        *batch % replicas ? fmt::format(" (+1 on the first {})", *batch % replicas) : "");
  if (multi_worker) {
    const int workers = strategy_->num_workers();
    log_.info(fmt::format("strategy {} on {}; batch: global {} = {} workers x {}; this worker's {}; this is {}{}",
                          strategy_->name(), fmt::join(strategy_->devices(), ", "), *batch * workers, workers, *batch,
                          split,
                          options_.cluster ? fmt::format("{} {}", options_.cluster->resolved().task.type,
                                                         options_.cluster->resolved().task.index)
                                           : std::to_string(strategy_->worker_index()),
                          chief && (!options_.cluster || options_.cluster->resolved().task.type != "chief")
                              ? ", the chief"
                              : ""));
  } else {
    log_.info(fmt::format("strategy {} on {}; batch: global {}", strategy_->name(),
                          fmt::join(strategy_->devices(), ", "), split));
  }
  if (options_.cluster) {
    for (const std::string& note : options_.cluster->resolved().notes) log_.info(note);
  }
  if (const std::string d = (*input)->describe(); !d.empty()) log_.info(d);
  if (const std::string d = strategy_->describe(); !d.empty()) log_.info(d);
  for (const std::string& line : describe_accumulation(job_, *batch, replicas, strategy_->num_workers())) {
    log_.info(line);
  }
  if (global_step_ >= run.max_steps) {
    log_.info(fmt::format("model_dir {} is already at step {} (max_steps {}); nothing to train", run.model_dir,
                          global_step_, run.max_steps));
    return Status::Ok();
  }
  if (stopped_before) {
    log_.info(chief ? fmt::format("early stopping: training stopped at step {} after the evaluation of step {}: {}; "
                                  "nothing to train (raise eval.early_stopping.patience_evals or min_delta, or remove "
                                  "it, to train on)",
                                  global_step_, early->stop_step(), early->reason())
                    : fmt::format("early stopping: the chief's model_dir stopped early at step {}; nothing to train",
                                  global_step_));
    if (options_.cluster && chief) {
      if (Status s = options_.cluster->client().set("train/final_step", std::to_string(global_step_)); !s) return s;
    }
    return Status::Ok();
  }

  if (chief && run.save_summary_steps > 0) {
    auto w = SummaryWriter::open(run.model_dir);
    if (!w) return w.error();
    train_writer_ = std::move(*w);
  }
  // In a cluster, evaluation is the evaluator task's work (TensorFlow's
  // train_and_evaluate): training tasks never stop to evaluate.
  const bool in_cluster = options_.cluster != nullptr;
  const bool can_eval = evaluate_during && job_.data.eval.has_value() && !in_cluster;
  if (in_cluster && chief && evaluate_during && job_.data.eval &&
      options_.cluster->resolved().cluster.count("evaluator") == 0) {
    if (job_.eval.early_stopping) {
      log_.warning("the cluster has no evaluator task: checkpoints are not evaluated during training and "
                   "eval.early_stopping cannot stop it (add an evaluator task)");
    } else {
      log_.info("the cluster has no evaluator task: checkpoints are not evaluated during training "
                "(add an evaluator task, or run dtrain evaluate)");
    }
  }

  const bool has_evaluator = in_cluster && options_.cluster->resolved().cluster.count("evaluator") > 0;
  if (chief && job_.export_spec && job_.export_spec->every == "eval" && !can_eval) {
    log_.info(has_evaluator ? std::string("export: every: eval: the evaluator task exports after its evaluations")
                            : fmt::format("export: every: eval exports after evaluations, and this run does not "
                                          "evaluate ({}): nothing is exported; every: final exports after the last "
                                          "step",
                                          in_cluster ? "the cluster has no evaluator task" : "--no-eval"));
  }

  // Stop signals are caught from the start of the process (stop_signals.hpp,
  // SIGUSR1 too: batch schedulers' warning before the end of a job, Slurm's
  // --signal=USR1@90); one received before this point stops training before
  // its first step, below.
  stopped_by_requeue_signal_ = false;

  const auto start = Clock::now();
  auto window_start = Clock::now(), last_save = Clock::now();
  std::optional<Clock::time_point> last_eval;
  int64_t window_steps = 0, window_examples = 0, saved_step = -1;
  double window_input_wait = 0;  // seconds blocked in input->next() this window
  double window_comm = 0, window_exposed = 0, total_comm = 0, total_exposed = 0;  // cross-worker all-reduce
  int64_t total_steps = 0;
  StepOutput summary_acc;
  double window_loss = 0;
  auto close_profile = [&](int64_t next_step) -> Status {
    auto lines = profile.close(next_step);
    if (!lines) return lines.error();
    log_.end_progress();
    for (const std::string& l : *lines) log_.info(l);
    return Status::Ok();
  };
  // In a cluster the evaluator decides early stops: the chief looks for its
  // decision (a coordination key) at most twice a second.
  const bool poll_early_stop = in_cluster && chief && job_.eval.early_stopping && evaluate_during &&
                               job_.data.eval && options_.cluster->resolved().cluster.count("evaluator") > 0;
  auto last_poll = Clock::now();
  std::string early_stop_reason;  // set when training stops early

  // A stop signal that came while the job loaded, the data was read or the
  // cluster formed: every task agrees, as after a step, and none trains.
  if (Status s = stop_before_first_step(multi_worker, chief); !s) return s;

  while (global_step_ < run.max_steps) {
    const int64_t this_step = global_step_;
    Profiler* prof = profile.begin_step(this_step);
    if (run.profile) (*input)->set_profiler(prof);
    // The step span: from asking for the batch to the end of its hooks.
    std::optional<ProfileScope> step_scope;
    if (prof) step_scope.emplace(prof, "step");
    const auto wait_start = Clock::now();
    std::optional<ProfileScope> input_scope;
    if (prof) input_scope.emplace(prof, "input", "wait");
    auto next = (*input)->next();
    input_scope.reset();
    window_input_wait += seconds_since(wait_start);
    if (!next) return next.error();
    // Every worker stops at the same step: when any worker's input ends.
    // Agreeing with the other workers is a phase of its own ("sync").
    std::optional<ProfileScope> sync_scope;
    if (prof && multi_worker) sync_scope.emplace(prof, "sync", "end of input");
    const bool out_of_data = multi_worker ? strategy_->any_worker(!next->has_value()) : !next->has_value();
    sync_scope.reset();
    if (out_of_data) {
      log_.warning(fmt::format("data.train ran out of examples at step {} (repeat: false); stopping early",
                               global_step_));
      break;
    }
    const Batch& b = **next;
    if (Status s = check_batch(b, train_spec, "data.train"); !s) return s;
    const float lr = static_cast<float>(learning_rate_at(job_.optimizer, global_step_));
    StepOutput out;
    {
      const ProfileScope compute(prof, "compute");
      program_.profiler = prof;
      out = strategy_->train_step(b, global_step_, lr);
      program_.profiler = nullptr;
    }
    std::optional<ProfileScope> hooks_scope;  // logging and summaries
    if (prof) hooks_scope.emplace(prof, "summaries");
    const auto [comm, exposed] = strategy_->last_comm_seconds();
    window_comm += comm;
    window_exposed += exposed;
    total_comm += comm;
    total_exposed += exposed;
    ++total_steps;
    const double loss = out.loss_sum / static_cast<double>(out.examples);
    if (!std::isfinite(loss)) {
      log_.end_progress();
      return runtime_error(fmt::format(
          "loss is {} at step {}; stopping. {} (nothing later was saved); lower the learning rate or set "
          "optimizer.clip_by_global_norm",
          std::isnan(loss) ? "NaN" : "Inf", global_step_ + 1,
          last_checkpoint_.empty() ? "No checkpoint was written" : "The last good checkpoint is " + last_checkpoint_));
    }
    const int64_t prev_step = global_step_;
    global_step_ = strategy_->global_step_after(global_step_);
    if (options_.cluster != nullptr) options_.cluster->client().set_steps_done(global_step_);  // named if it dies
    // Steps advance by one, except under asynchronous parameter servers,
    // where every worker's update counts: act when a multiple is crossed.
    auto crossed = [&](int64_t n) { return prev_step / n != global_step_ / n; };
    ++window_steps;
    window_examples += out.examples;
    window_loss += loss;
    accumulate(summary_acc, out);

    const bool last = global_step_ >= run.max_steps;
    if (run.log_step_count_steps > 0 && (crossed(run.log_step_count_steps) || last)) {
      const double secs = std::max(seconds_since(window_start), 1e-9);
      const double wait = std::min(1.0, window_input_wait / secs);
      log_.step({global_step_, run.max_steps, window_loss / static_cast<double>(window_steps), lr,
                 static_cast<double>(window_steps) / secs, static_cast<double>(window_examples) / secs, wait});
      if (train_writer_) {
        std::vector<std::pair<std::string, double>> s = {
            {"global_step/sec", static_cast<double>(window_steps) / secs},
            {"examples/sec", static_cast<double>(window_examples) / secs},
            {"input_wait_fraction", wait}};
        if (multi_worker) {
          s.emplace_back("all_reduce_seconds_per_step", window_comm / static_cast<double>(window_steps));
          s.emplace_back("all_reduce_exposed_seconds_per_step", window_exposed / static_cast<double>(window_steps));
        }
        if (Status st = train_writer_->scalars(global_step_, s); !st) return st;
      }
      window_start = Clock::now();
      window_steps = window_examples = 0;
      window_loss = 0;
      window_input_wait = 0;
      window_comm = window_exposed = 0;
    }
    if (train_writer_ && (crossed(run.save_summary_steps) || last)) {
      std::vector<std::pair<std::string, double>> s = output_scalars(program_, summary_acc);
      s.insert(s.begin() + 1, {"learning_rate", lr});
      if (Status st = train_writer_->scalars(global_step_, s); !st) return st;
      if (Status st = train_writer_->flush(); !st) return st;
      summary_acc = StepOutput{};
    }

    hooks_scope.reset();
    const int local_sig = received_stop_signal();
    bool local_early = false;  // the chief saw the evaluator's early-stopping decision
    if (poll_early_stop && seconds_since(last_poll) >= 0.5) {
      last_poll = Clock::now();
      if (auto d = options_.cluster->client().get("train/early_stop", std::chrono::milliseconds(1))) {
        local_early = true;
        early_stop_reason = *d;
      }
    }
    // A stop signal to any worker stops every worker after this step (and
    // the chief saves it); so does the evaluator's early stop.
    if (prof && multi_worker) sync_scope.emplace(prof, "sync", "stop signal");
    int stop_sig = 0;
    bool early_stop = false;
    if (multi_worker ? strategy_->any_worker(local_sig != 0 || local_early) : (local_sig != 0 || local_early)) {
      early_stop = multi_worker ? strategy_->any_worker(local_early) : local_early;
      const bool any_sig = multi_worker ? strategy_->any_worker(local_sig != 0) : local_sig != 0;
      // A task whose own signal arrived during the agreement reports it as its
      // own (Slurm signals a step's tasks one after another).
      const int own = local_sig ? local_sig : received_stop_signal();
      if (any_sig) stop_sig = own ? own : -1;
    }
    sync_scope.reset();
    if (stop_sig != 0) {
      // Every task stops at this step: agree whether any was sent SIGUSR1.
      const bool usr1 = received_stop_signal() == SIGUSR1;
      stopped_by_requeue_signal_ = multi_worker ? strategy_->any_worker(usr1) : usr1;
    }
    bool save_now = last || stop_sig != 0 || early_stop;
    if (run.save_checkpoints_steps && *run.save_checkpoints_steps > 0) {
      save_now = save_now || crossed(*run.save_checkpoints_steps);
    }
    if (run.save_checkpoints_secs) save_now = save_now || seconds_since(last_save) >= *run.save_checkpoints_secs;
    if (save_now && chief) {
      {
        const ProfileScope checkpoint(prof, "checkpoint");
        if (Status s = save((*input)->position(), (*input)->state()); !s) return s;
      }
      saved_step = global_step_;
      last_save = Clock::now();
      const bool throttle_ok = !last_eval || seconds_since(*last_eval) >= job_.eval.throttle_secs;
      const bool delay_ok = seconds_since(start) >= job_.eval.start_delay_secs;
      if (can_eval && stop_sig == 0 && (last || (throttle_ok && delay_ok))) {
        const ProfileScope eval(prof, "eval");
        auto r = run_evaluation(last_checkpoint_);
        if (!r) return r.error();
        last_eval = Clock::now();
        if (early && early->add(r->global_step, metric_value(*r, early_metric()))) {
          if (Status s = record_early_stop(*early); !s) return s;
          early_stop = true;
          early_stop_reason = early->reason();
        }
        if (Status s = export_after(&*r, last || early_stop); !s) return s;
      }
    }
    step_scope.reset();
    if (profile.should_close(this_step, last || stop_sig != 0 || early_stop)) {
      if (Status s = close_profile(global_step_); !s) return s;
    }
    if (early_stop && stop_sig == 0) {
      log_.end_progress();
      log_.info(chief ? fmt::format("early stopping at step {}: {}; checkpoint {} saved", global_step_,
                                    early_stop_reason, last_checkpoint_)
                      : fmt::format("early stopping at step {} (the evaluator's decision); the chief saved the "
                                    "checkpoint",
                                    global_step_));
      break;
    }
    if (stop_sig != 0) {
      log_.end_progress();
      if (chief && stopped_by_requeue_signal_ && options_.on_requeue_signal) {
        auto [message, warning] = options_.on_requeue_signal(last_checkpoint_);
        if (warning) {
          log_.warning(message);
        } else if (!message.empty()) {
          log_.info(message);
        }
      }
      // The other tasks leave once the chief has saved (and requeued): they
      // exit 75, on which srun --kill-on-bad-exit kills the rest of the step.
      if (multi_worker) strategy_->any_worker(false);
      // The ps tasks, which keep serving through a stop signal, are stopped
      // as at the end of training, once the chief has saved.
      if (Status s = strategy_->finish_training(); !s) return s;
    }
    if (stop_sig < 0) {
      return Error{ErrorKind::kStopped,
                   fmt::format("stopped at step {} because another task of the cluster received a stop signal; the "
                               "chief saved a checkpoint; run the same command to resume",
                               global_step_)};
    }
    if (stop_sig != 0) {
      return Error{ErrorKind::kStopped,
                   fmt::format("stopped by {} at step {}; checkpoint {} saved; run the same command to resume",
                               stop_signal_name(stop_sig), global_step_,
                               chief ? last_checkpoint_ : std::string("by the chief"))};
    }
  }
  if (profile.open()) {
    if (Status s = close_profile(global_step_); !s) return s;
  }
  if (chief && saved_step != global_step_ && global_step_ > 0) {
    if (Status s = save((*input)->position(), (*input)->state()); !s) return s;
    if (can_eval) {
      auto r = run_evaluation(last_checkpoint_);
      if (!r) return r.error();
      if (Status s = export_after(&*r, true); !s) return s;
    }
  }
  // every: final, or any export when the final step was not evaluated (--no-eval, a cluster).
  if (chief && global_step_ > 0 && job_.export_spec && job_.export_spec->every == "final") {
    if (Status s = export_after(nullptr, true); !s) return s;
  }
  log_.end_progress();
  if (Status s = strategy_->finish_training(); !s) return s;
  if (in_cluster && chief) {
    // The evaluator stops after the checkpoint of this step.
    if (Status s = options_.cluster->client().set("train/final_step", std::to_string(global_step_)); !s) return s;
  }
  if (options_.cluster && total_steps > 0) {
    const double step_ms = 1e3 * seconds_since(start) / static_cast<double>(total_steps);
    if (strategy_->name() == "collective" && multi_worker) {
      const double overlapped = total_comm > 0 ? 100.0 * (1.0 - total_exposed / total_comm) : 0.0;
      log_.info(fmt::format("cross-worker all-reduce: {:.2f} ms per step, {:.2f} ms of it not overlapped with "
                            "backward ({:.0f}% overlapped; mean over {} steps of {:.2f} ms)",
                            1e3 * total_comm / static_cast<double>(total_steps),
                            1e3 * total_exposed / static_cast<double>(total_steps), overlapped, total_steps, step_ms));
    } else if (strategy_->name() == "parameter_server") {
      log_.info(fmt::format("ps RPCs (pull and push): {:.2f} ms per step of {:.2f} ms (mean over {} steps)",
                            1e3 * total_comm / static_cast<double>(total_steps), step_ms, total_steps));
    }
    if (const std::string c = strategy_->comm_summary(total_steps); !c.empty()) log_.info(c);
  }
  log_.info(chief ? fmt::format("training finished at step {}; checkpoint {}", global_step_, last_checkpoint_)
                  : fmt::format("training finished at step {}; the chief saved the checkpoint", global_step_));
  return Status::Ok();
}

}  // namespace dtrain
