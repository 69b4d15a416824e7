// Elastic training (strategy.elastic): after a lost worker the survivors
// regroup (the strategy), and this worker's input is opened again for its
// rows of the same global batch, at the position of the step to redo.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>

#include "estimator/elastic_training.hpp"
#include "estimator/estimator.hpp"
#include "estimator/train_setup.hpp"
#include "engine/io/file_util.hpp"
#include "estimator/hooks/training_hook.hpp"
#include "strategies/cluster_runtime.hpp"

namespace dtrain {

namespace fs = std::filesystem;

namespace {

// "elastic: <who left or joined>; 3 of 4 workers go on from step 24 ..., the
// global batch 64 split 16 + 16 + 32 (...), this worker rank 0 with rows 0..15".
std::string regroup_line(const Strategy::Regrouped& r, int64_t rows, int64_t micro_batch_rows) {
  const std::vector<int64_t>& cuts = r.row_cuts;
  std::vector<int64_t> sizes;
  for (size_t k = 0; k + 1 < cuts.size(); ++k) sizes.push_back(cuts[k + 1] - cuts[k]);
  const bool equal = std::all_of(sizes.begin(), sizes.end(), [&](int64_t v) { return v == sizes[0]; });
  std::string split = equal ? fmt::format("{} x {}", r.workers, sizes[0]) : fmt::format("{}", fmt::join(sizes, " + "));
  if (micro_batch_rows > 0 && cuts.back() % micro_batch_rows == 0 && !equal) {
    split += fmt::format(" (whole micro-batches of {}, in ranges of the one_device sum's tree)", micro_batch_rows);
  }
  const std::string who =
      r.workers_before == 0 ? fmt::format("this worker joined the running training as 1 of {} workers; they go on",
                                          r.workers)
      : r.workers < r.workers_before  ? fmt::format("{} of {} workers go on", r.workers, r.workers_before)
      : r.workers == r.workers_before ? fmt::format("the {} workers go on", r.workers)
                                      : fmt::format("{} workers ({} before) go on", r.workers, r.workers_before);
  const auto w = static_cast<size_t>(r.rank);
  return fmt::format("elastic: {}; {} from step {} ({}), the global batch {} split {}, this worker rank {} with rows "
                     "{}..{}",
                     fmt::join(r.changes, "; "), who, r.redo_step, r.redo_why, rows, split, r.rank, cuts[w],
                     cuts[w + 1] - 1);
}

}  // namespace

Status Estimator::regroup_after_loss(TrainingSetup& t) {
  ElasticLoop& e = t.elastic;
  const bool again = !e.pending.empty();  // no step done over the group before: one line tells both
  if (!again) e.lost_at = std::chrono::steady_clock::now();
  log_.end_progress();
  const int64_t completed = global_step_;
  // The same global batch, split over the new group.
  if (elastic_global_rows_ == 0) elastic_global_rows_ = t.global_batch;
  const int64_t rows = elastic_global_rows_;
  // Not kept: this worker was lost in the agreements after the step before
  // (the strategy checked), and its input is at the step's start.
  auto position_at = [&](int64_t step) -> int64_t {
    if (std::optional<int64_t> p = e.position_at(step)) return *p;
    return step == completed ? t.input->position() : -1;
  };
  auto r = strategy_->regroup(completed, rows, position_at);
  if (!r) return r.error();
  const int64_t position = r->input_position >= 0 ? r->input_position : position_at(r->redo_step);
  if (position < 0) {
    return cluster_error(fmt::format("elastic: the group redoes step {}, whose input position this worker (at step "
                                     "{}) no longer holds",
                                     r->redo_step, completed));
  }
  elastic_row_cuts_ = r->row_cuts;
  auto input = open_input(*job_.data.train, "train", rows / r->workers, vocabulary_, true);
  if (!input) return input.error();
  if (Status s = (*input)->restore(position); !s) return s;
  e.input->replace(std::move(*input));
  global_step_ = r->redo_step;
  if (again) {
    r->changes.insert(r->changes.begin(), e.pending_changes.begin(), e.pending_changes.end());
    r->workers_before = e.pending_workers_before;
  }
  e.pending_changes = r->changes;
  e.pending_workers_before = r->workers_before;
  e.pending = regroup_line(*r, rows, program_.micro_batch_rows);
  return Status::Ok();
}

Status Estimator::take_chief_duties(TrainingSetup& t, HookList& hooks) {
  const RunSpec& run = job_.run;
  t.chief = true;
  std::error_code ec;
  fs::create_directories(run.model_dir, ec);
  if (ec) return runtime_error(fmt::format("cannot create model_dir {}: {}", run.model_dir, ec.message()));
  // What the lost chief was writing when it died (a checkpoint, the index).
  for (const fs::path& dir : {fs::path(run.model_dir), fs::path(run.model_dir) / "eval"}) {
    const std::vector<std::string> stale = io::remove_stale_temporaries(dir.string());
    if (!stale.empty()) {
      log_.info(fmt::format("removed {} temporary file{} in {} left by the lost chief: {}", stale.size(),
                            stale.size() == 1 ? "" : "s", dir.string(), fmt::join(stale, ", ")));
    }
  }
  if (auto latest = latest_checkpoint(run.model_dir)) last_checkpoint_ = *latest;
  if (Status s = run_record_.begin(run.model_dir, global_step_, run.max_steps); !s) return s;
  if (!train_writer_ && (run.save_summary_steps > 0 || run.histogram_steps > 0)) {
    auto w = SummaryWriter::open(run.model_dir);
    if (!w) return w.error();
    train_writer_ = std::move(*w);
  }
  if (t.early) {
    if (Status s = t.early->replay((fs::path(run.model_dir) / "eval").string(), global_step_); !s) return s;
  }
  const bool has_evaluator = t.in_cluster && options_.cluster->resolved().cluster.count("evaluator") > 0;
  t.poll_early_stop = t.in_cluster && job_.eval.early_stopping && t.evaluate_during && job_.data.eval && has_evaluator;
  hooks = make_training_hooks(t);
  log_.info(fmt::format("elastic: this worker is the chief from step {} on: it writes the checkpoints and summaries "
                        "in {} (the latest: {})",
                        global_step_, run.model_dir, last_checkpoint_.empty() ? "none yet" : last_checkpoint_));
  return Status::Ok();
}

Status Estimator::join_running_training(TrainingSetup& t, int64_t global_rows) {
  t.elastic.lost_at = std::chrono::steady_clock::now();
  elastic_global_rows_ = global_rows;
  auto r = strategy_->regroup(Strategy::kJoining, global_rows, {});
  if (!r) return r.error();
  if (r->input_position < 0) return cluster_error("elastic: rank 0 sent no input position to the joining worker");
  if (r->global_rows > 0) elastic_global_rows_ = r->global_rows;
  elastic_row_cuts_ = r->row_cuts;
  global_step_ = r->redo_step;
  restored_input_position_ = r->input_position;
  t.elastic.pending_changes = r->changes;
  t.elastic.pending_workers_before = r->workers_before;
  t.elastic.pending = regroup_line(*r, elastic_global_rows_, program_.micro_batch_rows);
  t.elastic.joined = true;
  return Status::Ok();
}

}  // namespace dtrain
