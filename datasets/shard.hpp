// Splitting a source's examples among the workers of a multi-worker job
// (data.*.shard): by example through the global batch (every worker computes
// the same global order and takes its rows of each global batch, so the
// cluster trains on exactly what one process with the whole batch would), or
// by file (tf.data's FILE policy: each worker its own files and order).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "engine/base/status.hpp"

namespace dtrain {

// The examples begin .. begin+count-1 split by file: one list per file that
// holds any of them, in file order, each ascending. `file_starts` is
// ExampleSource::file_starts() (ascending, starting with 0).
// REQUIRES: begin >= 0, count >= 1.
std::vector<std::vector<int64_t>> split_by_file(const std::vector<int64_t>& file_starts, int64_t begin, int64_t count);

struct ShardChoice {
  std::string policy;  // what was asked for: auto | file | data | off
  std::string used;    // what applies: file | data | off ("off" when there is one worker)
  // This worker's examples, by file (files with none are dropped); with
  // `data`, every example (the worker's rows are cut from each global batch).
  std::vector<std::vector<int64_t>> files;
  int64_t num_examples = 0;  // in all of `files`
};

// This worker's share of `files` (split_by_file's result):
//   off  : everything;
//   file : files worker_index, worker_index + num_workers, ...;
//   data : everything; the pipeline orders (and shuffles) it the same way on
//          every worker, batches it num_workers times larger and gives this
//          worker its contiguous rows of each such global batch;
//   auto : data. (Sources are read whole into memory, so reading every file
//          everywhere costs no more than file sharding and keeps the run
//          equal to one process's.)
// With num_workers == 1 every policy gives everything. A policy name not among
// these, file sharding over fewer files than workers, or a worker left with
// no examples give kConfig errors starting with `prefix`.
// REQUIRES: 0 <= worker_index < num_workers.
Result<ShardChoice> shard_files(std::vector<std::vector<int64_t>> files, const std::string& policy, int num_workers,
                                int worker_index, const std::string& prefix);

// Worker `worker`'s rows [begin, end) of a global batch of `rows` over
// `workers`: cuts[worker] .. cuts[worker + 1] when the batch is as long as
// cuts.back(), else rows * worker / workers .. rows * (worker + 1) / workers.
std::pair<int64_t, int64_t> worker_rows(int64_t rows, int workers, int worker, const std::vector<int64_t>& cuts);

}  // namespace dtrain
