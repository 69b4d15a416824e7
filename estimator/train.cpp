// The training loop: restore, then step -> hooks (estimator/hooks/: NaN
// guard, ETA and live line, progress lines, summaries, stop signals, checkpoint + evaluation +
// export, profile window) until max_steps, the end of the input, an early
// stop or a stop signal. What it sets up first: estimator/train_setup.cpp.
#include <fmt/format.h>

#include <chrono>
#include <csignal>
#include <memory>
#include <optional>
#include <string>
#include <tuple>

#include "datasets/pipeline.hpp"
#include "engine/backend/cuda/gpu_ops.hpp"
#include "engine/losses/label_check.hpp"
#include "engine/optim/optimizer.hpp"
#include "estimator/estimator.hpp"
#include "estimator/hooks/checkpoint_hook.hpp"
#include "estimator/hooks/comm_report_hook.hpp"
#include "estimator/hooks/histogram_hook.hpp"
#include "estimator/hooks/nan_guard_hook.hpp"
#include "estimator/hooks/profile_hook.hpp"
#include "estimator/hooks/progress_hook.hpp"
#include "estimator/hooks/start_summary_hook.hpp"
#include "estimator/hooks/step_log_hook.hpp"
#include "estimator/hooks/stop_signal_hook.hpp"
#include "estimator/hooks/summary_hook.hpp"
#include "estimator/hooks/training_hook.hpp"
#include "engine/stop_signals.hpp"
#include "estimator/run_summaries.hpp"
#include "estimator/train_setup.hpp"
#include "strategies/cluster_runtime.hpp"

namespace dtrain {

HookList Estimator::make_training_hooks(TrainingSetup& t) {
  const RunSpec& run = job_.run;
  HookList hooks;
  if (t.in_cluster) hooks.push_back(std::make_unique<CommReportHook>(log_, *strategy_));
  hooks.push_back(std::make_unique<NanGuardHook>(log_, last_checkpoint_));
  hooks.push_back(std::make_unique<ProgressHook>(log_));  // the ETA, and the live line on a terminal
  if (run.log_step_count_steps > 0) {
    // Its steps/sec scalars are train summaries: none under save_summary_steps: 0 (the writer may be open for histograms).
    SummaryWriter* scalars = run.save_summary_steps > 0 ? train_writer_.get() : nullptr;
    hooks.push_back(std::make_unique<StepLogHook>(log_, scalars, run.log_step_count_steps, t.multi_worker));
  }
  if (train_writer_) {
    hooks.push_back(std::make_unique<StartSummaryHook>(*train_writer_, job_, job_hparams(job_, program_, t.global_batch),
                                                       job_metrics(job_, program_)));
    if (run.save_summary_steps > 0) {
      hooks.push_back(std::make_unique<SummaryHook>(*train_writer_, program_, run.save_summary_steps));
    }
    if (run.histogram_steps > 0) {
      hooks.push_back(std::make_unique<HistogramHook>(*train_writer_, *strategy_, program_, run.histogram_steps, log_));
    }
  }
  hooks.push_back(std::make_unique<StopSignalHook>(*strategy_, t.multi_worker,
                                                   t.poll_early_stop ? &options_.cluster->client() : nullptr,
                                                   stopped_by_requeue_signal_));
  if (t.chief) {
    Input& input = *t.input;
    CheckpointHook::Actions actions{
        [this, &input] {
          Status saved = save(input.position(), input.state());
          // On a terminal the saves show above the live line; log files keep their lines as they were.
          if (saved && log_.is_live()) log_.info(fmt::format("saved checkpoint {}", last_checkpoint_));
          return saved;
        },
        [this] { return run_evaluation(last_checkpoint_); },
        [this](const EvalResult* eval, bool final_step) { return export_after(eval, final_step); },
        [this](const EarlyStopping& early) { return record_early_stop(early); },
        [this](const EvalResult& r) { return metric_value(r, early_metric()); },
    };
    hooks.push_back(std::make_unique<CheckpointHook>(run, job_.eval, t.can_eval, t.early.get(),
                                                     job_.export_spec && job_.export_spec->every == "final",
                                                     std::move(actions)));
  }
  if (run.profile) hooks.push_back(std::make_unique<ProfileHook>(*t.profile, *t.input, log_));
  return hooks;
}

void Estimator::requeue(const std::string& checkpoint) {
  if (!stopped_by_requeue_signal_ || !options_.on_requeue_signal) return;
  auto [message, warning] = options_.on_requeue_signal(checkpoint);
  if (warning) {
    log_.warning(message);
  } else if (!message.empty()) {
    log_.info(message);
  }
}

Status Estimator::stop_before_first_step(bool multi_worker, bool chief) {
  const int local_sig = received_stop_signal();
  if (!(multi_worker ? strategy_->any_worker(local_sig != 0) : local_sig != 0)) return Status::Ok();
  const int own = local_sig ? local_sig : received_stop_signal();
  const bool usr1 = own == SIGUSR1;
  stopped_by_requeue_signal_ = multi_worker ? strategy_->any_worker(usr1) : usr1;
  log_.end_progress();
  if (chief) requeue(last_checkpoint_.empty() ? std::string("the start (no checkpoint yet)") : last_checkpoint_);
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
  Status s = train_steps(evaluate_during);
  log_.end_progress();  // the caller prints an error on a clean line, not after the live line
  if (train_writer_) {
    // The HParams tab's session status; an error writing it is the run's error only when it had none.
    if (Status end = write_run_end(*train_writer_, global_step_, s); !end && s.ok()) s = end;
  }
  run_record_.end(s, global_step_);  // model_dir/run.json: finished, stopped or failed
  return s;
}

Status Estimator::train_steps(bool evaluate_during) {
  const RunSpec& run = job_.run;
  TrainingSetup t;
  if (Status s = prepare_training(evaluate_during, t); !s || t.nothing_to_train) return s;
  if (t.chief) {
    if (Status s = run_record_.begin(run.model_dir, global_step_, run.max_steps); !s) return s;
  }
  HookList hooks = make_training_hooks(t);
  // Stop signals are caught from the start of the process (stop_signals.hpp,
  // SIGUSR1 too: batch schedulers' warning before the end of a job, Slurm's
  // --signal=USR1@90). One that came while the job loaded, the data was read
  // or the cluster formed: every task agrees, as after a step, and none trains.
  stopped_by_requeue_signal_ = false;
  // A worker that joined running training (strategy.elastic) agrees with
  // the others from its first step on: the group made its start-up
  // agreement long ago.
  if (Status s = stop_before_first_step(t.multi_worker && !t.elastic.joined, t.chief); !s) return s;

  ElasticLoop& elastic = t.elastic;
  // Elastic training: a lost worker fails every collective of the step;
  // the survivors regroup and go on from the last step all of them completed.
  auto lost = [&] { return elastic.input != nullptr && strategy_->membership_lost(); };
  // After the loss of the task that hosted the coordination service, the
  // member that took it over is the chief from now on.
  auto regroup = [&]() -> Status {
    if (Status st = regroup_after_loss(t); !st) return st;
    return !t.chief && strategy_->is_chief() ? take_chief_duties(t, hooks) : Status::Ok();
  };
  while (global_step_ < run.max_steps) {
    if (elastic.input != nullptr) {
      strategy_->keep_state(global_step_);
      elastic.keep(global_step_, t.input->position());
      if (strategy_->membership_changed()) {  // a worker lost, or one joining: at this step boundary
        if (Status st = regroup(); !st) return st;
        continue;
      }
    }
    StepState s;
    s.step_before = global_step_;
    s.max_steps = run.max_steps;
    if (Status st = run_before_step(hooks, s); !st) return st;
    const auto wait_start = std::chrono::steady_clock::now();
    auto next = [&] {
      const ProfileScope input(s.profiler, "input", "wait");
      return t.input->next();
    }();
    s.input_wait_seconds = seconds_since(wait_start);
    if (!next) return next.error();
    // Every worker stops at the same step: when any worker's input ends.
    bool out_of_data = !next->has_value();
    if (t.multi_worker) {
      const ProfileScope sync(s.profiler, "sync", "end of input");
      out_of_data = strategy_->any_worker(out_of_data);
    }
    if (lost()) {
      if (Status st = regroup(); !st) return st;
      continue;
    }
    if (out_of_data) {
      log_.warning(fmt::format("data.train ran out of examples at step {} (repeat: false); stopping early",
                               global_step_));
      break;
    }
    const Batch& b = **next;
    if (Status st = check_batch(b, *job_.data.train, "data.train", *t.input); !st) return st;
    s.learning_rate = static_cast<float>(learning_rate_at(job_.optimizer, global_step_));
    {
      const ProfileScope compute(s.profiler, "compute");
      program_.profiler = s.profiler;
      s.out = strategy_->train_step(b, global_step_, s.learning_rate);
      program_.profiler = nullptr;
    }
    if (lost()) {
      if (Status st = regroup(); !st) return st;
      continue;
    }
    if (!elastic.pending.empty()) {
      log_.info(fmt::format("{}; step {} done {:.2f} s after the change was seen", elastic.pending, global_step_ + 1,
                            seconds_since(elastic.lost_at)));
      elastic.pending.clear();
    }
    std::tie(s.comm_seconds, s.comm_exposed_seconds) = strategy_->last_comm_seconds();
    s.loss = s.out.loss_sum / static_cast<double>(s.out.examples);
    global_step_ = s.step = strategy_->global_step_after(global_step_);
    if (options_.cluster != nullptr) options_.cluster->client().set_steps_done(global_step_);  // named if it dies
    s.batch = &b;
    if (Status st = run_after_step(hooks, s); !st) return st;
    if (lost()) {  // in a hook's agreement (a stop signal): this step is done, a survivor's may not be
      if (Status st = regroup(); !st) return st;
      continue;
    }
    if (s.stop_signal != 0) return stop_after_step(s.stop_signal, t.multi_worker, t.chief);
    if (s.early_stop) {
      log_.end_progress();
      log_.info(t.chief ? fmt::format("early stopping at step {}: {}; checkpoint {} saved", global_step_,
                                      s.early_stop_reason, last_checkpoint_)
                        : fmt::format("early stopping at step {} (the evaluator's decision); the chief saved the "
                                      "checkpoint",
                                      global_step_));
      break;
    }
  }
  if (Status s = run_end(hooks, global_step_); !s) return s;
  log_.end_progress();
  if (Status s = strategy_->finish_training(); !s) return s;
  if (t.in_cluster && t.chief) {
    // The evaluator stops after the checkpoint of this step.
    if (Status s = options_.cluster->client().set("train/final_step", std::to_string(global_step_)); !s) return s;
  }
  log_conv_algorithms();
  log_.info(t.chief ? fmt::format("training finished at step {}; checkpoint {}", global_step_, last_checkpoint_)
                    : fmt::format("training finished at step {}; the chief saved the checkpoint", global_step_));
  return Status::Ok();
}

// On GPUs, which cuDNN algorithm each convolution ran with (under
// run.deterministic: whether a deterministic one existed), once at the end.
void Estimator::log_conv_algorithms() {
  bool on_gpu = false;
  for (const Device& d : strategy_->devices()) on_gpu = on_gpu || d.kind == DeviceKind::cuda;
  if (!on_gpu) return;
  for (const std::string& line : gpu::conv_algorithms()) log_.info(line);
}

Status Estimator::stop_after_step(int stop_signal, bool multi_worker, bool chief) {
  log_.end_progress();
  if (chief) requeue(last_checkpoint_);
  // The other tasks leave once the chief has saved (and requeued): they exit
  // 75, on which srun --kill-on-bad-exit kills the rest of the step.
  if (multi_worker) strategy_->any_worker(false);
  // The ps tasks, which keep serving through a stop signal, are stopped as at
  // the end of training, once the chief has saved.
  if (Status s = strategy_->finish_training(); !s) return s;
  if (stop_signal < 0) {
    return Error{ErrorKind::kStopped,
                 fmt::format("stopped at step {} because another task of the cluster received a stop signal; the "
                             "chief saved a checkpoint; run the same command to resume",
                             global_step_)};
  }
  return Error{ErrorKind::kStopped,
               fmt::format("stopped by {} at step {}; checkpoint {} saved; run the same command to resume",
                           stop_signal_name(stop_signal), global_step_,
                           chief ? last_checkpoint_ : std::string("by the chief"))};
}

}  // namespace dtrain
