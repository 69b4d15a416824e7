// check_accumulation and describe_accumulation: the batch must split into
// run.accumulation_steps equal micro-batches on every replica (pinned errors
// with a suggestion), and the start-up lines say what an update is; for
// run.micro_batch_rows whether the split gives one_device's bits.
#include <doctest.h>

#include <optional>
#include <string>
#include <vector>

#include "estimator/accumulation.hpp"
#include "engine/layers/batch_norm.hpp"
#include "engine/layers/registry.hpp"

namespace dtrain {
namespace {

JobSpec job_with(int64_t k, int64_t batch_size, std::optional<int64_t> per_replica = std::nullopt) {
  JobSpec job;
  job.source_path = "job.yaml";
  job.run.accumulation_steps = k;
  DataSourceSpec d;
  d.where = "job.yaml:12:3";
  d.batch_size = batch_size;
  d.batch_size_per_replica = per_replica;
  job.data.train = d;
  return job;
}

TEST_CASE("accumulation: a batch that splits into K micro-batches per replica is accepted") {
  CHECK(check_accumulation(job_with(1, 7), BatchPlan{7, 3}));
  CHECK(check_accumulation(job_with(4, 32), BatchPlan{32, 2}));
  CHECK(check_accumulation(job_with(4, 0, 8), BatchPlan{16, 2}));
  CHECK(describe_accumulation(job_with(1, 7), BatchPlan{7, 1}).empty());
  const auto lines = describe_accumulation(job_with(4, 32), BatchPlan{32, 2});
  REQUIRE(lines.size() == 1);
  CHECK(lines[0] ==
        "gradient accumulation: each update of 32 rows runs as 4 micro-batches of 4 rows on each of 2 replica(s); "
        "their gradients are summed into one optimizer update (equal to one step on the 32 rows); steps count "
        "updates");
}

TEST_CASE("accumulation: a batch not divisible by K x replicas is a config error with the nearest batches") {
  const Status s = check_accumulation(job_with(4, 30), BatchPlan{30, 2});
  REQUIRE_FALSE(s);
  CHECK(s.error().kind == ErrorKind::kConfig);
  CHECK(s.error().message ==
        "job.yaml:12:3: data.train.batch_size: 30 rows per update do not split into run.accumulation_steps 4 "
        "micro-batches on each of 2 replica(s) (the batch must be divisible by 4 x 2 = 8); try 24 or 32");
  const Status small = check_accumulation(job_with(4, 3), BatchPlan{3, 1});
  REQUIRE_FALSE(small);
  CHECK(small.error().message ==
        "job.yaml:12:3: data.train.batch_size: 3 rows per update do not split into run.accumulation_steps 4 "
        "micro-batches on each of 1 replica(s) (the batch must be divisible by 4 x 1 = 4); try 4");
  const Status per = check_accumulation(job_with(4, 0, 6), BatchPlan{12, 2});
  REQUIRE_FALSE(per);
  CHECK(per.error().message ==
        "job.yaml:12:3: data.train.batch_size_per_replica: 12 rows per update do not split into "
        "run.accumulation_steps 4 micro-batches on each of 2 replica(s) (the batch must be divisible by 4 x 2 = 8); "
        "try 4 or 8");
}

TEST_CASE("accumulation: batch_norm is noted, and sync batch_norm refused") {
  JobSpec job = job_with(2, 16);
  LayerSpec bn = default_layer_spec("batch_norm");
  bn.where = "job.yaml:5:7";
  job.model.layers.push_back(bn);
  const auto lines = describe_accumulation(job, BatchPlan{16, 2});
  REQUIRE(lines.size() == 2);
  CHECK(lines[1] == "note: batch_norm computes its statistics per micro-batch of 4 rows, not over the 16 rows of an "
                    "update, so training differs from one step on the whole batch (as in every framework)");
  CHECK(check_accumulation(job, BatchPlan{16, 2}));
  layer_options<BatchNormSpec>(job.model.layers[0]).sync = true;
  const Status s = check_accumulation(job, BatchPlan{16, 2});
  REQUIRE_FALSE(s);
  CHECK(s.error().message ==
        "job.yaml:5:7: batch_norm sync: true cannot be combined with run.accumulation_steps 2 (its statistics would "
        "be summed over the replicas once per micro-batch); use sync: false or accumulation_steps: 1");
}

JobSpec micro(int64_t rows, int64_t batch_size) {
  JobSpec job = job_with(1, batch_size);
  job.run.micro_batch_rows = rows;
  return job;
}

TEST_CASE("micro_batch_rows: the start-up lines say whether the split gives one_device's bits") {
  CHECK(check_accumulation(micro(16, 30), BatchPlan{30, 2}));  // any batch is accepted
  const auto lines = describe_accumulation(micro(16, 128), BatchPlan{128, 2});
  REQUIRE(lines.size() == 1);
  CHECK(lines[0] ==
        "micro-batches: each replica's shard of 64 rows runs as 4 micro-batch(es) of 16 rows (run.micro_batch_rows); "
        "their gradients, then the replicas' sums, are added in one fixed pairwise order that every strategy shares");
  const auto workers = describe_accumulation(micro(16, 64), BatchPlan{64, 1, 3});
  REQUIRE(workers.size() == 1);
  CHECK(workers[0].find("then the replicas' and the workers' sums (an ordered all-reduce), are added") !=
        std::string::npos);
  // 48 rows: 3 micro-batches of 16, not a power of two.
  const auto three = describe_accumulation(micro(16, 48), BatchPlan{48, 1});
  REQUIRE(three.size() == 2);
  CHECK(three[1] ==
        "note: a shard of 48 rows is not a power-of-two number of whole micro-batches of 16 rows, so the sums are "
        "grouped differently than one_device's on the whole global batch (deterministic, not the same bits); "
        "1, 2, 4, 8, ... micro-batches per shard give one_device's bits");
  CHECK(describe_accumulation(micro(16, 40), BatchPlan{40, 1}).size() == 2);  // a shorter last micro-batch
  // Across workers, each worker's batch counts too: 3 replicas x 1 micro-batch.
  const auto worker = describe_accumulation(micro(16, 48), BatchPlan{48, 3, 2});
  REQUIRE(worker.size() == 2);
  CHECK(worker[1] ==
        "note: this worker's 48 rows are 3 micro-batches of 16 rows, not a power of two, so the workers' sums are "
        "grouped differently than one_device's on the whole global batch (deterministic, not the same bits)");
  CHECK(describe_accumulation(micro(16, 48), BatchPlan{48, 3, 1}).size() == 1);  // one process: 3 replicas are fine
}

TEST_CASE("micro_batch_rows: refused with accumulation_steps and with sync batch_norm") {
  JobSpec both = micro(16, 64);
  both.run.accumulation_steps = 2;
  const Status s = check_accumulation(both, BatchPlan{64, 1});
  REQUIRE_FALSE(s);
  CHECK(s.error().kind == ErrorKind::kConfig);
  CHECK(s.error().message ==
        "job.yaml: run.micro_batch_rows 16 and run.accumulation_steps 2 both split each replica's shard into "
        "micro-batches; set one of them (micro_batch_rows also fixes the order in which every strategy adds the "
        "gradients)");
  JobSpec bn = micro(8, 64);
  LayerSpec layer = default_layer_spec("batch_norm");
  layer.where = "job.yaml:5:7";
  bn.model.layers.push_back(layer);
  CHECK(check_accumulation(bn, BatchPlan{64, 2}));
  const auto lines = describe_accumulation(bn, BatchPlan{64, 2});
  REQUIRE(lines.size() == 2);
  CHECK(lines[1] == "note: batch_norm computes its statistics per micro-batch of 8 rows, not over the 64 rows of an update");
  layer_options<BatchNormSpec>(bn.model.layers[0]).sync = true;
  const Status sync = check_accumulation(bn, BatchPlan{64, 2});
  REQUIRE_FALSE(sync);
  CHECK(sync.error().message ==
        "job.yaml:5:7: batch_norm sync: true cannot be combined with run.micro_batch_rows 8 (its statistics would be "
        "summed over the replicas once per micro-batch); use sync: false or leave micro_batch_rows unset");
}

}  // namespace
}  // namespace dtrain
