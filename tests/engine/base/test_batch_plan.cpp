// BatchPlan: a source's batch size as rows per process, replica and step.
#include <doctest.h>

#include "engine/base/batch_plan.hpp"

namespace dtrain {
namespace {

TEST_CASE("batch plan: batch_size is per process; batch_size_per_replica times the replicas") {
  const BatchPlan given = plan_batch(13, std::nullopt, 3, 2);
  CHECK(given.per_process == 13);
  CHECK(given.global() == 26);
  CHECK(given.per_replica() == 4);
  CHECK(given.extra() == 1);
  CHECK(given.replica_split() == "13 = 3 replica(s) x 4 (+1 on the first 1)");
  CHECK(given.ordered(true) == 26);   // shard: data orders every worker's rows as one batch
  CHECK(given.ordered(false) == 13);  // shard: file / off: this process's
  const BatchPlan per_replica = plan_batch(999, 8, 4, 1);
  CHECK(per_replica.per_process == 32);
  CHECK(per_replica.global() == 32);
  CHECK(per_replica.replica_split() == "32 = 4 replica(s) x 8");
}

}  // namespace
}  // namespace dtrain
