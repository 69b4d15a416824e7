// Elastic training's part of the training loop (strategy.elastic): the
// input whose split over the workers changes when one is lost, and the
// input positions kept for the last two steps. Private to estimator/.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "datasets/dataset.hpp"

namespace dtrain {

// An Input that can be replaced by another of the same spec (opened for the
// new split of the global batch) while the hooks keep referring to this one.
class ReplaceableInput final : public Input {
 public:
  explicit ReplaceableInput(std::unique_ptr<Input> inner) : inner_(std::move(inner)) {}
  void replace(std::unique_ptr<Input> inner) {
    inner_ = std::move(inner);
    inner_->set_profiler(profiler_);
  }

  Result<std::optional<Batch>> next() override { return inner_->next(); }
  int64_t position() const override { return inner_->position(); }
  Status restore(int64_t batches_delivered) override { return inner_->restore(batches_delivered); }
  std::string state() const override { return inner_->state(); }
  Status restore_state(int64_t batches_delivered, const std::string& state) override {
    return inner_->restore_state(batches_delivered, state);
  }
  Shape feature_shape() const override { return inner_->feature_shape(); }
  Shape label_shape() const override { return inner_->label_shape(); }
  DType feature_dtype() const override { return inner_->feature_dtype(); }
  std::vector<Shape> extra_feature_shapes() const override { return inner_->extra_feature_shapes(); }
  std::vector<DType> extra_feature_dtypes() const override { return inner_->extra_feature_dtypes(); }
  std::vector<Shape> extra_label_shapes() const override { return inner_->extra_label_shapes(); }
  std::string describe() const override { return inner_->describe(); }
  std::vector<std::string> class_names() const override { return inner_->class_names(); }
  std::string locate(int64_t id, const ExampleValue& value) const override { return inner_->locate(id, value); }
  void set_profiler(Profiler* profiler) override {
    profiler_ = profiler;
    inner_->set_profiler(profiler);
  }

 private:
  std::unique_ptr<Input> inner_;
  Profiler* profiler_ = nullptr;
};

// What the loop keeps for elastic training besides the strategy's state.
struct ElasticLoop {
  ReplaceableInput* input = nullptr;  // the training input (null: not elastic)
  int64_t kept_step[2] = {-1, -1};    // the steps whose start positions are kept
  int64_t kept_position[2] = {0, 0};  // batches delivered at their start
  // After a regroup: the line to log once the first step over the new group
  // is done, and when the loss was first seen.
  std::string pending;
  // Of the regroups since the last step done (workers lost one after
  // another, each noticed before a step over the group before completed):
  // the changes and the group size before the first, told in one line.
  std::vector<std::string> pending_changes;
  int pending_workers_before = 0;
  bool joined = false;  // this process joined the running training (started again after it was lost)
  std::chrono::steady_clock::time_point lost_at{};

  void keep(int64_t step, int64_t position) {
    kept_step[step % 2] = step;
    kept_position[step % 2] = position;
  }
  std::optional<int64_t> position_at(int64_t step) const {
    if (step < 0 || kept_step[step % 2] != step) return std::nullopt;
    return kept_position[step % 2];
  }
};

}  // namespace dtrain
