// Elastic training (strategy.elastic): after a lost worker the survivors
// regroup (the strategy), and this worker's input is opened again for its
// rows of the same global batch, at the position of the step to redo.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "estimator/elastic_training.hpp"
#include "estimator/estimator.hpp"
#include "estimator/train_setup.hpp"

namespace dtrain {

Status Estimator::regroup_after_loss(TrainingSetup& t) {
  ElasticLoop& e = t.elastic;
  e.lost_at = std::chrono::steady_clock::now();
  log_.end_progress();
  const int64_t completed = global_step_;
  auto r = strategy_->regroup(completed);
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
  // The same global batch, split over the survivors (as evenly as the rows allow).
  if (elastic_global_rows_ == 0) elastic_global_rows_ = t.global_batch;
  const int64_t rows = elastic_global_rows_, n = r->workers, w = r->rank;
  auto input = open_input(*job_.data.train, "train", rows / n, vocabulary_, true);
  if (!input) return input.error();
  if (Status s = (*input)->restore(*position); !s) return s;
  e.input->replace(std::move(*input));
  global_step_ = r->redo_step;
  // The input cuts worker k's rows [G k / n, G (k + 1) / n) of each global batch of G.
  std::vector<int64_t> sizes;
  for (int64_t k = 0; k < n; ++k) sizes.push_back(rows * (k + 1) / n - rows * k / n);
  const std::string split = rows % n == 0 ? fmt::format("{} x {}", n, rows / n) : fmt::format("{}", fmt::join(sizes, " + "));
  e.pending = fmt::format("elastic: {}; {} of {} workers go on from step {} (the last step every one of them "
                          "completed), the global batch {} split {}, this worker rank {} with rows {}..{}",
                          fmt::join(r->lost, "; "), n, r->workers_before, r->redo_step, rows, split, w, rows * w / n,
                          rows * (w + 1) / n - 1);
  return Status::Ok();
}

}  // namespace dtrain
