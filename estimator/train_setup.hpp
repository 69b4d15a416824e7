// What Estimator::train sets up before its first step (estimator/train_setup.cpp)
// and its loop then uses. Private to train.cpp and train_setup.cpp.
#pragma once

#include <cstdint>
#include <memory>

#include "datasets/pipeline.hpp"
#include "estimator/early_stopping.hpp"
#include "estimator/elastic_training.hpp"
#include "estimator/profile_report.hpp"

namespace dtrain {

struct TrainingSetup {
  bool chief = false;         // reads and writes model_dir (the only task of a local run)
  bool multi_worker = false;  // more than one training worker: they agree on every stop
  bool in_cluster = false;    // a task of a TF_CONFIG cluster
  bool can_eval = false;      // evaluates after checkpoint saves (a local train_and_evaluate with data.eval)
  bool poll_early_stop = false;  // the chief follows the evaluator's early-stopping decision
  bool evaluate_during = false;  // train_and_evaluate (not train alone)
  bool nothing_to_train = false;  // already at max_steps, or stopped early before: train() returns Ok
  int64_t global_batch = 0;       // examples of one update over every replica and worker
  std::unique_ptr<EarlyStopping> early;  // eval.early_stopping of a local train_and_evaluate; null otherwise
  std::unique_ptr<ProfileWindow> profile;
  std::unique_ptr<Input> input;  // data.train, at the restored position
  ElasticLoop elastic;           // strategy.elastic: what the loop keeps to go on after a lost worker
};

}  // namespace dtrain
