// Elastic training (strategy.elastic): after a lost worker the survivors
// regroup (the strategy), and this worker's input is opened again for its
// rows of the same global batch, at the position of the step to redo.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "estimator/elastic_training.hpp"
#include "estimator/estimator.hpp"
#include "estimator/train_setup.hpp"

namespace dtrain {

Status Estimator::regroup_after_loss(TrainingSetup& t) {
  ElasticLoop& e = t.elastic;
  e.lost_at = std::chrono::steady_clock::now();
  log_.end_progress();
  const int64_t completed = global_step_;
  // The same global batch, split over the survivors.
  if (elastic_global_rows_ == 0) elastic_global_rows_ = t.global_batch;
  const int64_t rows = elastic_global_rows_;
  auto r = strategy_->regroup(completed, rows);
  if (!r) return r.error();
  // Not kept: this worker was lost in the agreements after the step before
  // (the strategy checked), and its input is at the step's start.
  std::optional<int64_t> position = e.position_at(r->redo_step);
  if (!position && r->redo_step == completed) position = t.input->position();
  if (!position) {
    return cluster_error(fmt::format("elastic: the survivors redo step {}, whose input position this worker (at step "
                                     "{}) no longer holds",
                                     r->redo_step, completed));
  }
  const int64_t n = r->workers, w = r->rank;
  elastic_row_cuts_ = r->row_cuts;
  auto input = open_input(*job_.data.train, "train", rows / n, vocabulary_, true);
  if (!input) return input.error();
  if (Status s = (*input)->restore(*position); !s) return s;
  e.input->replace(std::move(*input));
  global_step_ = r->redo_step;
  std::vector<int64_t> sizes;
  const std::vector<int64_t>& cuts = r->row_cuts;
  for (size_t k = 0; k + 1 < cuts.size(); ++k) sizes.push_back(cuts[k + 1] - cuts[k]);
  const bool equal = std::all_of(sizes.begin(), sizes.end(), [&](int64_t v) { return v == sizes[0]; });
  std::string split = equal ? fmt::format("{} x {}", n, sizes[0]) : fmt::format("{}", fmt::join(sizes, " + "));
  if (program_.micro_batch_rows > 0 && cuts.back() % program_.micro_batch_rows == 0 && !equal) {
    split += fmt::format(" (whole micro-batches of {}, in ranges of the one_device sum's tree)", program_.micro_batch_rows);
  }
  e.pending = fmt::format("elastic: {}; {} of {} workers go on from step {} (the last step every one of them "
                          "completed), the global batch {} split {}, this worker rank {} with rows {}..{}",
                          fmt::join(r->lost, "; "), n, r->workers_before, r->redo_step, rows, split, w,
                          cuts[static_cast<size_t>(w)], cuts[static_cast<size_t>(w) + 1] - 1);
  return Status::Ok();
}

}  // namespace dtrain
