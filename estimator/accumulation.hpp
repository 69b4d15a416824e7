// run.accumulation_steps and run.micro_batch_rows at the start of training:
// the check of the training batch against them and the start-up lines that
// state what they mean.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/base/batch_plan.hpp"
#include "engine/base/job_spec.hpp"
#include "engine/base/status.hpp"

namespace dtrain {

// A kConfig error unless `batch` (the rows of one update in this process,
// data.train's batch_size or batch_size_per_replica x replicas) splits into
// run.accumulation_steps micro-batches of equal rows on each of `replicas`,
// and unless a synchronised batch_norm meets accumulation_steps > 1 or
// micro_batch_rows, or both of those are set.
// REQUIRES: job.data.train; replicas >= 1.
Status check_accumulation(const JobSpec& job, const BatchPlan& plan);

// The start-up lines for accumulation_steps > 1 or micro_batch_rows (empty
// for neither): the split of an update into micro-batches, for
// micro_batch_rows whether the split gives one_device's bits (each replica's
// shard, and with several `workers` each worker's batch, a power-of-two
// number of whole micro-batches) and, when the model has batch_norm, that its
// statistics are per micro-batch. REQUIRES: check_accumulation passed.
std::vector<std::string> describe_accumulation(const JobSpec& job, const BatchPlan& plan);

}  // namespace dtrain
