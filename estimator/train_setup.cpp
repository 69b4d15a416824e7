// Training's start (Estimator::prepare_training): model_dir, the vocabulary
// of text data, restoring the latest checkpoint or warm-starting, the
// cluster's agreement on where to start, the input at its position, and the
// start-up lines that say what will run.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <filesystem>
#include <memory>
#include <numeric>

#include "engine/base/device.hpp"
#include "engine/io/file_util.hpp"
#include "estimator/accumulation.hpp"
#include "estimator/estimator.hpp"
#include "estimator/train_setup.hpp"
#include "estimator/warm_start.hpp"
#include "strategies/cluster_runtime.hpp"

namespace dtrain {

namespace fs = std::filesystem;

namespace {

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

Status Estimator::prepare_training(bool evaluate_during, TrainingSetup& t) {
  const RunSpec& run = job_.run;
  if (!job_.data.train) return config_error(fmt::format("{}: data.train: required for training", job_.source_path));
  // In a cluster only the chief reads and writes model_dir; the others get
  // its state through the strategy (they may not even share the directory).
  t.chief = strategy_->is_chief();
  t.multi_worker = strategy_->num_workers() > 1;
  t.in_cluster = options_.cluster != nullptr;
  t.evaluate_during = evaluate_during;
  const bool chief = t.chief;
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
  if (Status s = prepare_training_token_vocabulary(chief); !s) return s;
  // So are the features of csv columns (vocabularies, fills, class names).
  if (Status s = prepare_training_tabular(chief); !s) return s;

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
  std::unique_ptr<EarlyStopping> early;
  if (job_.eval.early_stopping && evaluate_during && job_.data.eval) {
    early = std::make_unique<EarlyStopping>(*job_.eval.early_stopping);
    if (chief) {
      if (Status s = early->replay(eval_dir.string(), global_step_); !s) return s;
    }
  }
  bool stopped_before = early && early->stopped();

  if (strategy_->rejoining()) {
    // Lost earlier and started again: the running group takes it back.
    auto plan = batch_plan(*job_.data.train, "train");
    if (!plan) return plan.error();
    log_.status("joining the running training (strategy.elastic)");
    Status joined = join_running_training(t, plan->global());
    log_.end_progress();
    if (!joined) return joined;
  } else if (options_.cluster) {
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
  auto plan = batch_plan(train_spec, "train");
  if (!plan) return plan.error();
  const int64_t batch = plan->per_process;
  if (Status s = check_accumulation(job_, *plan); !s) return s;
  // run.profile: only the chief writes the trace; every task prints its
  // table. Made before the input, whose prefetch thread may record into it.
  t.profile =
      std::make_unique<ProfileWindow>(run.profile, chief ? (fs::path(run.model_dir) / "profile").string() : std::string());
  // Reading (or indexing) the data can take a while: say so at once.
  log_.status(fmt::format("loading data.train ({})", train_spec.format));
  auto input = open_input(train_spec, "train", batch, vocabulary_, true);
  log_.end_progress();  // an error is printed on a clean line
  if (!input) return input.error();
  t.input = std::move(*input);
  if (strategy_->elastic()) {
    // A lost worker changes this worker's rows of each global batch: the
    // input is opened again for the new split.
    auto replaceable = std::make_unique<ReplaceableInput>(std::move(t.input));
    t.elastic.input = replaceable.get();
    t.input = std::move(replaceable);
  }
  if (Status s = resolve_balanced_class_weights(train_spec, batch); !s) return s;
  // A streaming input continues from its saved state; without one (a worker
  // other than the chief, an older checkpoint) it replays the batches' records.
  if (Status s = t.input->restore_state(restored_input_position_, chief ? restored_input_state_ : ""); !s) return s;

  log_threads();
  const std::string split = plan->replica_split();
  if (t.multi_worker) {
    log_.info(fmt::format("strategy {} on {}; batch: global {} = {} workers x {}; this worker's {}; this is {}{}",
                          strategy_->name(), device_list(strategy_->devices()), plan->global(), plan->workers,
                          batch, split,
                          options_.cluster ? fmt::format("{} {}", options_.cluster->resolved().task.type,
                                                         options_.cluster->resolved().task.index)
                                           : std::to_string(strategy_->worker_index()),
                          chief && (!options_.cluster || options_.cluster->resolved().task.type != "chief")
                              ? ", the chief"
                              : ""));
  } else {
    log_.info(fmt::format("strategy {} on {}; batch: global {}", strategy_->name(),
                          device_list(strategy_->devices()), split));
  }
  if (options_.cluster) {
    for (const std::string& note : options_.cluster->resolved().notes) log_.info(note);
  }
  if (const std::string d = t.input->describe(); !d.empty()) log_.info(d);
  if (const std::string d = strategy_->describe(); !d.empty()) log_.info(d);
  for (const std::string& line : describe_accumulation(job_, *plan)) {
    log_.info(line);
  }
  if (global_step_ >= run.max_steps) {
    log_.info(fmt::format("model_dir {} is already at step {} (max_steps {}); nothing to train", run.model_dir,
                          global_step_, run.max_steps));
    t.nothing_to_train = true;
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
    t.nothing_to_train = true;
    return Status::Ok();
  }

  t.global_batch = plan->global();
  if (chief && (run.save_summary_steps > 0 || run.histogram_steps > 0)) {
    auto w = SummaryWriter::open(run.model_dir);
    if (!w) return w.error();
    train_writer_ = std::move(*w);
  }
  // In a cluster, evaluation is the evaluator task's work (TensorFlow's
  // train_and_evaluate): training tasks never stop to evaluate.
  const bool in_cluster = t.in_cluster;
  t.can_eval = evaluate_during && job_.data.eval.has_value() && !in_cluster;
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
  if (chief && job_.export_spec && job_.export_spec->every == "eval" && !t.can_eval) {
    log_.info(has_evaluator ? std::string("export: every: eval: the evaluator task exports after its evaluations")
                            : fmt::format("export: every: eval exports after evaluations, and this run does not "
                                          "evaluate ({}): nothing is exported; every: final exports after the last "
                                          "step",
                                          in_cluster ? "the cluster has no evaluator task" : "--no-eval"));
  }
  // In a cluster the evaluator decides early stops: the chief looks for its decision.
  t.poll_early_stop =
      in_cluster && chief && job_.eval.early_stopping && evaluate_during && job_.data.eval && has_evaluator;
  t.early = std::move(early);
  return Status::Ok();
}

Status Estimator::resolve_balanced_class_weights(const DataSourceSpec& train_spec, int64_t batch) {
  std::vector<size_t> balanced;
  for (size_t j = 0; j < program_.outputs.size(); ++j) {
    if (program_.outputs[j].class_weights.balanced) balanced.push_back(j);
  }
  if (balanced.empty()) return Status::Ok();
  // Every example once, in file order, whatever the job's order and shard:
  // every task gets the same counts.
  DataSourceSpec once = train_spec;
  once.shuffle = 0;
  once.repeat = false;
  once.prefetch = 0;
  once.shard = "off";
  log_.status("counting data.train's classes for class_weight: balanced");
  auto input = open_input(once, "train", batch, vocabulary_, false);
  if (!input) {
    log_.end_progress();
    return input.error();
  }
  std::vector<std::vector<int64_t>> counts(program_.outputs.size());
  for (size_t j : balanced) counts[j].assign(static_cast<size_t>(program_.outputs[j].class_weights.classes), 0);
  for (;;) {
    auto next = (*input)->next();
    if (!next) {
      log_.end_progress();
      return next.error();
    }
    if (!next->has_value()) break;
    const Batch& b = **next;
    for (size_t j : balanced) {
      const Tensor& labels = j == 0 ? b.labels : b.extra_labels.at(j - 1);
      for (int64_t c : example_classes(program_.outputs[j].class_weights, labels)) {
        if (c >= 0) ++counts[j][static_cast<size_t>(c)];
      }
    }
  }
  log_.end_progress();
  for (size_t j : balanced) {
    ClassWeights& w = program_.outputs[j].class_weights;
    w.per_class = balanced_class_weights(counts[j]);
    const std::string name = program_.outputs[j].name.empty() ? "" : " of output " + program_.outputs[j].name;
    log_.info(fmt::format("class_weight: balanced{} from {} examples of data.train: {}", name,
                          std::accumulate(counts[j].begin(), counts[j].end(), int64_t{0}),
                          describe_class_weights(w.per_class)));
  }
  return Status::Ok();
}

}  // namespace dtrain
