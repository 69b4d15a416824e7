// EarlyStopping: the improvement rule (min/max, min_delta, patience, NaN),
// the replay of model_dir/eval/metrics-<step>.json and the record it writes.
#include <doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "estimator/early_stopping.hpp"
#include "../engine/io/io_test_util.hpp"

namespace dtrain {
namespace {

EarlyStoppingSpec spec(const char* mode, int64_t patience, double min_delta = 0, const char* metric = "loss") {
  EarlyStoppingSpec s;
  s.metric = metric;
  s.mode = mode;
  s.patience_evals = patience;
  s.min_delta = min_delta;
  return s;
}

// The step of the evaluation that stops, or -1: values at steps 10, 20, ...
int64_t stop_step(const EarlyStoppingSpec& s, const std::vector<double>& values) {
  EarlyStopping e(s);
  for (size_t i = 0; i < values.size(); ++i) {
    if (e.add(10 * static_cast<int64_t>(i + 1), values[i])) return e.stop_step();
  }
  CHECK_FALSE(e.stopped());
  return -1;
}

void write_metrics(const std::string& dir, int64_t step, double loss) {
  nlohmann::json j{{"global_step", step}, {"metrics", {{"loss", loss}, {"accuracy", 0.5}}}};
  std::ofstream(dir + "/metrics-" + std::to_string(step) + ".json") << j.dump();
}

}  // namespace

TEST_CASE("early stopping: patience counts evaluations in a row without improvement") {
  // min: 3 evaluations not below the best (1.0 at step 20) -> stops at step 50.
  CHECK(stop_step(spec("min", 3), {2.0, 1.0, 1.5, 1.0, 1.2, 0.5}) == 50);
  // An improvement resets the count.
  CHECK(stop_step(spec("min", 3), {2.0, 2.5, 2.6, 1.0, 1.1, 1.2, 1.3}) == 70);
  CHECK(stop_step(spec("min", 3), {3.0, 2.0, 1.0, 0.5}) == -1);
  // max mode: higher is better.
  CHECK(stop_step(spec("max", 2), {0.5, 0.7, 0.6, 0.7}) == 40);
  CHECK(stop_step(spec("max", 2), {0.5, 0.6, 0.7, 0.8}) == -1);
  // patience 1: the first evaluation that does not improve.
  CHECK(stop_step(spec("min", 1), {1.0, 0.9, 0.95}) == 30);
}

TEST_CASE("early stopping: min_delta is the least change that counts, and NaN never improves") {
  // 0.95 and 0.92 are within 0.1 of the best 1.0: no improvement.
  CHECK(stop_step(spec("min", 2, 0.1), {1.0, 0.95, 0.92}) == 30);
  CHECK(stop_step(spec("min", 2, 0.1), {1.0, 0.85, 0.7}) == -1);
  // 0.56 improves on 0.5 by more than 0.05; 0.57 and 0.6 do not improve on 0.56.
  CHECK(stop_step(spec("max", 2, 0.05), {0.5, 0.54, 0.56, 0.57, 0.6}) == 50);
  CHECK(stop_step(spec("min", 2), {NAN, 1.0, NAN, NAN}) == 40);
}

TEST_CASE("early stopping: the reason names the metric, the best and the last evaluation") {
  EarlyStopping e(spec("min", 2, 0.001));
  CHECK_FALSE(e.add(10, 0.5));
  CHECK_FALSE(e.add(20, 0.75));
  CHECK(e.add(30, 0.875));
  CHECK_FALSE(e.add(40, 0.1));  // stopped stays stopped
  CHECK(e.stop_step() == 30);
  CHECK(e.reason() ==
        "eval loss has not decreased by more than 0.001 in 2 evaluations in a row (best 0.5 at step 10; last 0.875 "
        "at step 30)");
  EarlyStopping m(spec("max", 1, 0, "accuracy"));
  m.add(5, 0.9);
  CHECK(m.add(10, 0.9));
  CHECK(m.reason() ==
        "eval accuracy has not increased by more than 0 in 1 evaluation in a row (best 0.9 at step 5; last 0.9 at step "
        "10)");
}

TEST_CASE("early stopping: replay continues the history of model_dir/eval in step order up to a step") {
  testing::TempDir dir;
  // Written out of order; step 100 is after the resumed checkpoint.
  write_metrics(dir.path(), 40, 1.5);
  write_metrics(dir.path(), 10, 1.0);
  write_metrics(dir.path(), 30, 1.2);
  write_metrics(dir.path(), 20, 1.1);
  write_metrics(dir.path(), 100, 0.1);
  std::ofstream(dir / "metrics.json") << "{}";  // the latest copy, not part of the history
  {
    EarlyStopping e(spec("min", 3));
    REQUIRE(e.replay(dir.path(), 40).ok());
    CHECK(e.stopped());
    CHECK(e.stop_step() == 40);
    REQUIRE(e.write_record(dir.path()).ok());
    std::ifstream in(dir / "early_stopping.json");
    const nlohmann::json record = nlohmann::json::parse(in);
    CHECK(record["stopped_at_eval_step"] == 40);
    CHECK(record["best_step"] == 10);
    CHECK(record["best"] == 1.0);
    CHECK(record["reason"] == e.reason());
  }
  {
    EarlyStopping e(spec("min", 3));
    REQUIRE(e.replay(dir.path(), 30).ok());
    CHECK_FALSE(e.stopped());
    CHECK(e.add(40, 1.3));  // the third without improvement
  }
  {
    // A metric the files lack: nothing to replay.
    EarlyStopping e(spec("max", 1, 0, "precision"));
    REQUIRE(e.replay(dir.path(), 1000).ok());
    CHECK_FALSE(e.stopped());
  }
  std::ofstream(dir / "metrics-50.json") << "not json";
  EarlyStopping e(spec("min", 3));
  Status s = e.replay(dir.path(), 60);
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().message == dir / "metrics-50.json" +
                                 ": not the JSON of an evaluation (eval.early_stopping reads it to resume)");
}

}  // namespace dtrain
