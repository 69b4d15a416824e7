// Sharding among workers (data, file, auto, off) and interleave over files:
// every example exactly once across workers, shard: data as rows of one
// global batch (the workers' batches put together are one process's), and the
// interleave order pinned on small cases (one from tf.data's documentation).
#include <doctest.h>

#include <algorithm>
#include <numeric>

#include "datasets/index_order.hpp"
#include "datasets/shard.hpp"
#include "stage_test_util.hpp"

namespace dtrain {
namespace {

using namespace stage_testing;
using Ids = std::vector<int64_t>;

// 12 examples in 4 files: [0, 1, 2] [3, 4] [5, 6, 7, 8] [9, 10, 11].
SourcePtr four_files() { return indexed_source(12, {2}, 3, {0, 3, 5, 9}); }

TEST_CASE("shard: sources report their files; split_by_file cuts the skip/take range at file starts") {
  CHECK(four_files()->file_starts() == Ids{0, 3, 5, 9});
  CHECK(make_tensor_source(Tensor(Shape{3, 1}), Tensor(Shape{3}), "one file")->file_starts() == Ids{0});
  CHECK(split_by_file({0, 3, 5, 9}, 0, 12) == std::vector<Ids>{{0, 1, 2}, {3, 4}, {5, 6, 7, 8}, {9, 10, 11}});
  CHECK(split_by_file({0, 3, 5, 9}, 4, 3) == std::vector<Ids>{{4}, {5, 6}});
  CHECK(split_by_file({0}, 2, 3) == std::vector<Ids>{{2, 3, 4}});
}

TEST_CASE("shard: data and file policies partition the examples among workers") {
  for (const char* policy : {"data", "file", "auto"}) {
    for (int workers : {2, 3, 4}) {
      CAPTURE(policy);
      CAPTURE(workers);
      DataSourceSpec spec = plain_spec();
      spec.shard = policy;
      Ids all;
      for (int w = 0; w < workers; ++w) {
        const Ids mine = flat_ids(*pipeline(four_files(), spec, 5, workers, w));
        CHECK_FALSE(mine.empty());
        all.insert(all.end(), mine.begin(), mine.end());
      }
      std::sort(all.begin(), all.end());
      Ids expected(12);
      std::iota(expected.begin(), expected.end(), 0);
      CHECK(all == expected);
    }
  }
}

TEST_CASE("shard: which examples each policy gives a worker") {
  DataSourceSpec spec = plain_spec();
  spec.shard = "data";
  spec.skip = 1;
  spec.take = 8;  // examples 1 .. 8: one global batch of 8 (< 3 x 4), cut 2 + 3 + 3
  CHECK(flat_ids(*pipeline(four_files(), spec, 4, 3, 0)) == Ids{1, 2});
  CHECK(flat_ids(*pipeline(four_files(), spec, 4, 3, 2)) == Ids{6, 7, 8});
  spec = plain_spec();
  spec.shard = "file";
  CHECK(flat_ids(*pipeline(four_files(), spec, 4, 2, 0)) == Ids{0, 1, 2, 5, 6, 7, 8});
  CHECK(flat_ids(*pipeline(four_files(), spec, 4, 2, 1)) == Ids{3, 4, 9, 10, 11});
  spec.shard = "off";
  CHECK(flat_ids(*pipeline(four_files(), spec, 4, 2, 1)).size() == 12);
}

TEST_CASE("shard: data: the workers' batches put together are one process's batch of workers x batch") {
  for (const char* policy : {"data", "auto"}) {
    for (int workers : {2, 3}) {
      for (bool interleave : {false, true}) {
        CAPTURE(policy);
        CAPTURE(workers);
        CAPTURE(interleave);
        DataSourceSpec spec = plain_spec();
        spec.shard = policy;
        spec.shuffle = 5;  // a buffer smaller than the data: the order depends on it and the seed
        spec.seed = 11;
        spec.repeat = true;
        if (interleave) spec.interleave = InterleaveSpec{2, 1};
        const int64_t batch = 2;
        auto one = pipeline(four_files(), spec, batch * workers);
        std::vector<std::unique_ptr<Input>> each;
        for (int w = 0; w < workers; ++w) each.push_back(pipeline(four_files(), spec, batch, workers, w));
        for (int step = 0; step < 15; ++step) {  // several epochs of 12
          const Batch whole = *one->next().value();
          Ids joined;
          for (int w = 0; w < workers; ++w) {
            const Batch mine = *each[static_cast<size_t>(w)]->next().value();
            CHECK(mine.offset == batch * w);
            CHECK(mine.size() == batch);
            joined.insert(joined.end(), mine.ids.begin(), mine.ids.end());
            // Features are the examples' own, gathered for this worker only.
            for (int64_t r = 0; r < batch; ++r) {
              CHECK(mine.features.data()[r * 2] == whole.features.data()[(batch * w + r) * 2]);
            }
          }
          CHECK(joined == whole.ids);
        }
      }
    }
  }
}

TEST_CASE("shard: data: a final global batch is cut evenly, and one smaller than the workers ends every worker's input") {
  DataSourceSpec spec = plain_spec();
  spec.shard = "data";
  spec.take = 11;  // global batches of 2 x 4: 8, then 3 cut 1 + 2
  Ids last;
  for (int w = 0; w < 2; ++w) {
    auto in = pipeline(four_files(), spec, 4, 2, w);
    CHECK(in->next().value()->size() == 4);
    const Batch b = *in->next().value();
    CHECK(b.offset == (w == 0 ? 0 : 1));
    last.insert(last.end(), b.ids.begin(), b.ids.end());
    CHECK_FALSE(in->next().value().has_value());
  }
  CHECK(last == Ids{8, 9, 10});
  spec.take = 11;  // global batches of 3 x 3: 9, then 2: three workers cannot each get a row
  for (int w = 0; w < 3; ++w) {
    auto in = pipeline(four_files(), spec, 3, 3, w);
    CHECK(in->next().value()->size() == 3);
    CHECK_FALSE(in->next().value().has_value());
  }
}

TEST_CASE("shard: auto is data; describe() says what each worker reads") {
  DataSourceSpec spec = plain_spec();
  auto two = pipeline(four_files(), spec, 4, 2, 1);
  CHECK(two->describe() == "data.train: shard auto (data): every worker orders the 12 examples alike; worker 1 of 2 "
                           "takes rows 4..7 of each global batch of 8");
  CHECK(flat_ids(*two) == Ids{4, 5, 6, 7, 10, 11});
  spec.shard = "file";
  CHECK(pipeline(four_files(), spec, 4, 2, 1)->describe() ==
        "data.train: shard file: worker 1 of 2 reads 5 of 12 examples, from 2 files: the workers see different examples "
        "than one process would (shard: data trains as one process with the global batch)");
  spec.shard = "off";
  CHECK(pipeline(four_files(), spec, 4, 2, 1)->describe() ==
        "data.train: shard off: worker 1 of 2 reads 12 of 12 examples, as every worker does (each trains on the same "
        "examples)");
  // One worker: nothing to say, everything read in order.
  spec.shard = "auto";
  auto one = pipeline(four_files(), spec, 4);
  CHECK(one->describe().empty());
  Ids expected(12);
  std::iota(expected.begin(), expected.end(), 0);
  CHECK(flat_ids(*one) == expected);
}

TEST_CASE("shard: impossible splits are config errors") {
  DataSourceSpec spec = plain_spec();
  spec.where = "job.yaml:20:5";
  spec.shard = "file";
  Error e = pipeline_error(four_files(), spec, 4, 5, 0);
  CHECK(e.kind == ErrorKind::kConfig);
  CHECK(e.message == "job.yaml:20:5: data.train: shard: file needs at least as many files as workers, got 4 files for 5 workers");
  spec.shard = "data";
  spec.take = 3;
  e = pipeline_error(four_files(), spec, 4, 4, 3);
  CHECK(e.message == "job.yaml:20:5: data.train: shard: data needs at least one example per worker, got 3 examples for "
                     "4 workers");
  spec.shard = "rows";
  e = pipeline_error(four_files(), spec, 4, 2, 0);
  CHECK(e.message == "job.yaml:20:5: data.train: shard \"rows\" is not one of auto, file, data, off");
  spec.shard = "auto";
  e = pipeline_error(four_files(), spec, 4, 2, 2);
  CHECK(e.message == "job.yaml:20:5: data.train: worker 2 of 2 does not exist: expected 0 <= worker index < workers");
}

TEST_CASE("interleave: tf.data's deterministic order") {
  // tf.data's documented example: range(1, 6), each x repeated 6 times,
  // cycle_length 2, block_length 4.
  std::vector<Ids> files;
  for (int64_t x = 1; x <= 5; ++x) files.push_back(Ids(6, x));
  CHECK(interleave_files(files, 2, 4) == Ids{1, 1, 1, 1, 2, 2, 2, 2, 1, 1, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 3, 3, 4, 4, 5, 5,
                                              5, 5, 5, 5});
  // Uneven files: an exhausted slot takes the next file when its turn comes.
  const std::vector<Ids> uneven{{0, 1, 2}, {3, 4}, {5, 6, 7, 8}, {9}};
  CHECK(interleave_files(uneven, 2, 2) == Ids{0, 1, 3, 4, 2, 5, 6, 9, 7, 8});
  CHECK(interleave_files(uneven, 1, 3) == Ids{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  CHECK(interleave_files(uneven, 4, 1) == Ids{0, 3, 5, 9, 1, 4, 6, 2, 7, 8});
}

TEST_CASE("interleave: through the pipeline, after sharding, before shuffle") {
  DataSourceSpec spec = plain_spec();
  spec.interleave = InterleaveSpec{3, 1};
  CHECK(flat_ids(*pipeline(four_files(), spec, 5)) == Ids{0, 3, 5, 1, 4, 6, 2, 7, 9, 8, 10, 11});
  // Worker 0 of 2 by file: files 0 and 2.
  spec.shard = "file";
  CHECK(flat_ids(*pipeline(four_files(), spec, 5, 2, 0)) == Ids{0, 5, 1, 6, 2, 7, 8});
  spec.shard = "auto";
  // Shuffling permutes the interleaved examples, the same way on every run.
  spec.shuffle = 100;
  spec.seed = 3;
  const Ids a = flat_ids(*pipeline(four_files(), spec, 5)), b = flat_ids(*pipeline(four_files(), spec, 5));
  CHECK(a == b);
  Ids sorted = a;
  std::sort(sorted.begin(), sorted.end());
  Ids expected(12);
  std::iota(expected.begin(), expected.end(), 0);
  CHECK(sorted == expected);
  CHECK(a != Ids{0, 3, 5, 1, 4, 6, 2, 7, 9, 8, 10, 11});
}

TEST_CASE("shard + interleave: restore(n) continues exactly as an uninterrupted run") {
  DataSourceSpec spec = plain_spec();
  spec.interleave = InterleaveSpec{2, 2};
  spec.shuffle = 4;
  spec.repeat = true;
  spec.shard = "data";
  auto full = pipeline(four_files(), spec, 3, 2, 1);
  std::vector<Ids> batches;
  for (int i = 0; i < 9; ++i) batches.push_back((*full->next().value()).ids);
  auto resumed = pipeline(four_files(), spec, 3, 2, 1);
  REQUIRE(resumed->restore(5).ok());
  for (int i = 5; i < 9; ++i) CHECK((*resumed->next().value()).ids == batches[static_cast<size_t>(i)]);
}


TEST_CASE("shard: worker_rows cuts a global batch evenly, or at given boundaries when the batch is whole") {
  // Even: worker k of n takes [G k / n, G (k + 1) / n).
  CHECK(worker_rows(64, 3, 0, {}) == std::pair<int64_t, int64_t>{0, 21});
  CHECK(worker_rows(64, 3, 1, {}) == std::pair<int64_t, int64_t>{21, 42});
  CHECK(worker_rows(64, 3, 2, {}) == std::pair<int64_t, int64_t>{42, 64});
  // Given boundaries (elastic training's whole micro-batches).
  const std::vector<int64_t> cuts = {0, 16, 32, 64};
  CHECK(worker_rows(64, 3, 0, cuts) == std::pair<int64_t, int64_t>{0, 16});
  CHECK(worker_rows(64, 3, 2, cuts) == std::pair<int64_t, int64_t>{32, 64});
  // A shorter last batch is cut evenly; boundaries for another count are ignored.
  CHECK(worker_rows(30, 3, 2, cuts) == std::pair<int64_t, int64_t>{20, 30});
  CHECK(worker_rows(64, 2, 1, cuts) == std::pair<int64_t, int64_t>{32, 64});
}

}  // namespace
}  // namespace dtrain
