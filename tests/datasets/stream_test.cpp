// data.*.stream: the record order equals the in-memory pipeline's for the
// same file order (IndexOrder's shuffle, interleave_files), every batch
// decodes to the values the in-memory source gives, a stream restored from
// any batch's state (or replayed) continues exactly as the uninterrupted one,
// and max_buffer_mb is never exceeded silently.
#include <doctest.h>
#include <unistd.h>

#include <filesystem>
#include <map>

#include "datasets/example_decode.hpp"
#include "datasets/index_order.hpp"
#include "datasets/pipeline.hpp"
#include "datasets/record_stream.hpp"
#include "datasets/tfrecord_file.hpp"
#include "tfrecord_test_util.hpp"

namespace dtrain {
namespace {

namespace fs = std::filesystem;

const int64_t kRecords[] = {7, 5, 9, 3};  // records per file

// Files shard-0..3.tfrecord; record r of file f has image [2, 2, 1] bytes
// (f, r, f + r, 7) and label 10 * f + r.
struct Shards {
  fs::path dir;
  Shards() {
    dir = fs::temp_directory_path() / ("dtrain_stream_test_" + std::to_string(getpid()));
    fs::create_directories(dir);
    for (int f = 0; f < 4; ++f) {
      std::string framed;
      for (int r = 0; r < kRecords[f]; ++r) {
        const float image[4] = {static_cast<float>(f), static_cast<float>(r), static_cast<float>(f + r), 7.0f};
        const float label = static_cast<float>(10 * f + r);
        append_tfrecord(framed, encode_example(image, 4, true, &label, 1, true));
      }
      REQUIRE(write_tfrecord_file(file(f), framed, f == 2).ok());  // one gzip file
    }
  }
  ~Shards() { fs::remove_all(dir); }
  std::string file(int f) const { return (dir / ("shard-" + std::to_string(f) + ".tfrecord")).string(); }
};

DataSourceSpec stream_spec(const Shards& s) {
  DataSourceSpec spec;
  spec.format = "tfrecord";
  spec.files = {(s.dir / "shard-*.tfrecord").string()};
  spec.features = {data_testing::feature("image", "bytes", {2, 2, 1}, "raw_uint8"),
                   data_testing::feature("label", "int64", {})};
  spec.label_feature = "label";
  spec.stream = true;
  spec.prefetch = 0;
  return spec;
}

std::unique_ptr<Input> input(const DataSourceSpec& spec, int64_t batch, int workers = 1, int worker = 0) {
  InputOptions options{"", batch, 5, "data.train"};
  options.num_workers = workers;
  options.worker_index = worker;
  auto in = make_input(spec, options);
  REQUIRE_MESSAGE(in.ok(), in.error().message);
  return std::move(in.value());
}

Error input_error(const DataSourceSpec& spec, int64_t batch) {
  auto in = make_input(spec, InputOptions{"", batch, 5, "data.train"});
  REQUIRE_FALSE(in.ok());
  return in.error();
}

TEST_CASE("stream: the order of tf.data's interleave and shuffle buffer over the epoch's file order") {
  Shards shards;
  StreamSpec st;
  for (int f = 0; f < 4; ++f) {
    st.files.push_back(shards.file(f));
    st.use.push_back(f);
  }
  st.cycle_length = 2;
  st.block_length = 3;
  st.shuffle_buffer = 6;
  st.seed = 11;
  st.repeat = true;
  RecordStream stream(st);
  for (int64_t epoch = 0; epoch < 3; ++epoch) {
    // The in-memory pipeline's order over the same files: example k of
    // file f is (f, k), numbered by position in the glob's concatenation.
    const std::vector<int32_t> order = RecordStream::file_order(st.use, st.seed, epoch, true);
    std::vector<std::vector<int64_t>> files;
    for (int32_t f : order) {
      std::vector<int64_t> ids;
      for (int64_t r = 0; r < kRecords[f]; ++r) ids.push_back(int64_t{f} << 40 | r);
      files.push_back(ids);
    }
    auto base = std::make_shared<const std::vector<int64_t>>(interleave_files(files, 2, 3));
    OrderSpec os;
    os.count = static_cast<int64_t>(base->size());
    os.shuffle_buffer = 6;
    os.seed = 11;
    os.base = base;
    const std::vector<int64_t> want = IndexOrder::epoch_order(os, epoch);
    std::vector<int64_t> got;
    for (size_t k = 0; k < want.size(); ++k) {
      StreamRecord r;
      auto ok = stream.next(r);
      REQUIRE(ok.ok());
      REQUIRE(*ok);
      CHECK(r.epoch == epoch);
      got.push_back(stream_record_id(r.ref));
    }
    CHECK(got == want);
    if (epoch == 0) CHECK(order != st.use);  // the files were shuffled (for this seed)
  }
}

TEST_CASE("stream: batches decode to the in-memory source's values, file after file") {
  Shards shards;
  DataSourceSpec spec = stream_spec(shards);
  spec.scale = 0.5;
  DataSourceSpec whole = spec;
  whole.stream = false;
  whole.repeat = false;
  spec.repeat = false;
  auto a = input(spec, 4);
  auto b = input(whole, 4);
  CHECK(a->feature_shape() == b->feature_shape());
  CHECK(a->describe().rfind("data.train: streaming 4 of 4 tfrecord files (in order), interleave 1 x 1, shuffle "
                            "buffer 0 records, 1 decode thread, prefetch 0 batches of 0.0 MiB; no max_buffer_mb", 0) == 0);
  int batches = 0;
  for (;;) {
    auto x = a->next();
    auto y = b->next();
    REQUIRE(x.ok());
    REQUIRE(y.ok());
    REQUIRE(x->has_value() == y->has_value());
    if (!x->has_value()) break;
    ++batches;
    const Batch &p = **x, &q = **y;
    REQUIRE(p.features.numel() == q.features.numel());
    for (int64_t k = 0; k < p.features.numel(); ++k) CHECK(p.features.data()[k] == q.features.data()[k]);
    for (int64_t k = 0; k < p.labels.numel(); ++k) CHECK(p.labels.data()[k] == q.labels.data()[k]);
    // ids: file << 40 | record
    for (size_t r = 0; r < p.ids.size(); ++r) {
      const float label = p.labels.data()[r];
      CHECK(p.ids[r] == (static_cast<int64_t>(label) / 10 << 40 | static_cast<int64_t>(label) % 10));
    }
  }
  CHECK(batches == 6);  // 24 records
}

// `count` batches of `in`: ids and features, and the state after each.
struct Run {
  std::vector<std::vector<int64_t>> ids;
  std::vector<std::vector<float>> features;
  std::vector<std::string> states;
};

Run take(Input& in, int count) {
  Run run;
  for (int i = 0; i < count; ++i) {
    auto b = in.next();
    REQUIRE(b.ok());
    REQUIRE(b->has_value());
    run.ids.push_back((*b)->ids);
    run.features.emplace_back((*b)->features.data(), (*b)->features.data() + (*b)->features.numel());
    run.states.push_back(in.state());
  }
  return run;
}

TEST_CASE("stream: restored from any batch's state, or replayed, it continues as the uninterrupted input") {
  Shards shards;
  DataSourceSpec spec = stream_spec(shards);
  spec.shuffle = 5;
  spec.interleave = InterleaveSpec{2, 2};
  spec.map = {};
  const int kBatches = 16;  // 80 records: more than three epochs of 24
  for (int64_t prefetch : {0, 3}) {
    spec.prefetch = prefetch;
    auto whole = input(spec, 5);
    const Run want = take(*whole, kBatches);
    for (int k = 1; k < kBatches; ++k) {
      INFO("restored after batch " << k << ", prefetch " << prefetch);
      auto resumed = input(spec, 5);
      REQUIRE(resumed->restore_state(k, want.states[static_cast<size_t>(k - 1)]).ok());
      CHECK(resumed->position() == k);
      const Run got = take(*resumed, kBatches - k);
      for (int i = 0; i < kBatches - k; ++i) {
        CHECK(got.ids[static_cast<size_t>(i)] == want.ids[static_cast<size_t>(k + i)]);
        CHECK(got.features[static_cast<size_t>(i)] == want.features[static_cast<size_t>(k + i)]);
        CHECK(got.states[static_cast<size_t>(i)] == want.states[static_cast<size_t>(k + i)]);
      }
      if (k % 5 == 0) {
        auto replayed = input(spec, 5);
        REQUIRE(replayed->restore(k).ok());
        CHECK(replayed->state() == want.states[static_cast<size_t>(k - 1)]);
        CHECK(take(*replayed, 1).ids[0] == want.ids[static_cast<size_t>(k)]);
      }
    }
  }
  SUBCASE("a state of other files") {
    auto in = input(spec, 5);
    DataSourceSpec fewer = spec;
    fewer.files = {shards.file(0), shards.file(1)};
    auto other = input(fewer, 5);
    take(*other, 2);
    Status s = in->restore_state(2, other->state());
    REQUIRE_FALSE(s.ok());
    CHECK(s.error().kind == ErrorKind::kData);
    CHECK(s.error().message == "the input position saved in the checkpoint is for 2 other files than the 4 files now "
                               "matched; resume with the same files, or start a new model_dir");
  }
}

TEST_CASE("stream: shard data gives each worker its rows of the same global batches") {
  Shards shards;
  DataSourceSpec spec = stream_spec(shards);
  spec.shuffle = 8;
  auto one = input(spec, 6);
  auto w0 = input(spec, 3, 2, 0);
  auto w1 = input(spec, 3, 2, 1);
  for (int i = 0; i < 8; ++i) {
    auto all = one->next();
    auto a = w0->next();
    auto b = w1->next();
    REQUIRE((all.ok() && a.ok() && b.ok()));
    std::vector<int64_t> joined = (*a)->ids;
    joined.insert(joined.end(), (*b)->ids.begin(), (*b)->ids.end());
    CHECK(joined == (*all)->ids);
    CHECK((*b)->offset == 3);
  }
}

TEST_CASE("stream: max_buffer_mb and what streaming does not do") {
  Shards shards;
  DataSourceSpec spec = stream_spec(shards);
  spec.where = "job.yaml:9:10";
  spec.max_buffer_mb = 1;
  spec.prefetch = 2;
  CHECK(input_error(spec, 20000).message ==
        "job.yaml:9:10: data.train: max_buffer_mb 1 is too small: 4 decoded batches of 20000 examples (0.4 MiB each) "
        "and 1 open files need 1.8 MiB before the shuffle buffer; raise max_buffer_mb or lower batch_size or prefetch");
  // A shuffle buffer of big records: each record here carries a 64 KiB image.
  const fs::path big = shards.dir / "big.tfrecord";
  std::string framed;
  std::vector<float> image(64 << 10, 3.0f);
  for (int r = 0; r < 20; ++r) {
    const float label = 1;
    append_tfrecord(framed, encode_example(image.data(), image.size(), true, &label, 1, true));
  }
  REQUIRE(write_tfrecord_file(big.string(), framed, false).ok());
  spec.files = {big.string()};
  spec.features[0].shape = {256, 256, 1};
  spec.shuffle = 16;
  spec.prefetch = 0;
  auto in = input(spec, 1);
  CHECK(in->describe().find("max_buffer_mb 1 (0.2 MiB for the shuffle buffer)") != std::string::npos);
  auto b = in->next();
  REQUIRE_FALSE(b.ok());
  CHECK(b.error().kind == ErrorKind::kConfig);
  CHECK(b.error().message ==
        "job.yaml:9:10: data.train: max_buffer_mb 1 exceeded: the shuffle buffer may hold 0.2 MiB of records besides "
        "0.8 MiB of decoded batches and open files; lower shuffle or raise max_buffer_mb (the shuffle buffer reached "
        "0.3 MiB with 4 of its 16 records)");
  spec.max_buffer_mb = 8;
  auto fits = input(spec, 1);
  CHECK(fits->next().ok());

  DataSourceSpec skip = stream_spec(shards);
  skip.skip = 3;
  CHECK(input_error(skip, 4).message == "data.train: skip and take are not available with stream: true (they count "
                                        "examples of the whole data set); split the files instead, or use stream: false");
  DataSourceSpec idx = stream_spec(shards);
  idx.format = "idx";
  CHECK(input_error(idx, 4).message == "data.train: stream: true reads format tfrecord only (format idx is read whole; "
                                       "write it as tfrecord shards with dtrain data convert)");
}

TEST_CASE("stream: a corrupt record gives the in-memory loader's error, when it is reached") {
  Shards shards;
  // Flip a byte of record 2's data in file 1.
  std::string path = shards.file(1);
  auto file = read_tfrecord_file(path, TfRecordCompression::kNone, false);
  REQUIRE(file.ok());
  const size_t at = static_cast<size_t>(file->records[2].data() - reinterpret_cast<const char*>(file->bytes.data()));
  std::vector<uint8_t> bytes = file->bytes;
  bytes[at + 1] ^= 0x40;
  {
    std::FILE* f = std::fopen(path.c_str(), "wb");
    REQUIRE(std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size());
    std::fclose(f);
  }
  auto whole = read_tfrecord_file(path, TfRecordCompression::kNone, false);
  REQUIRE_FALSE(whole.ok());
  DataSourceSpec spec = stream_spec(shards);
  spec.repeat = false;
  auto in = input(spec, 4);  // opening reads nothing
  Result<std::optional<Batch>> b = std::optional<Batch>();
  for (int i = 0; i < 4 && b.ok(); ++i) b = in->next();
  REQUIRE_FALSE(b.ok());
  CHECK(b.error().kind == ErrorKind::kData);
  CHECK(b.error().message == whole.error().message);
  spec.on_error = "skip";
  auto skipping = input(spec, 100);
  auto all = skipping->next();
  REQUIRE(all.ok());
  CHECK((*all)->size() == 23);
}

}  // namespace
}  // namespace dtrain

namespace dtrain {
namespace {

TEST_CASE("stream: cache memory gives the same batches, and later epochs no longer need the files") {
  Shards shards;
  DataSourceSpec spec = stream_spec(shards);
  spec.shuffle = 6;
  spec.interleave = InterleaveSpec{2, 3};
  auto plain = input(spec, 6);
  spec.cache = "memory";
  auto cached = input(spec, 6);
  CHECK(cached->describe().find("; cache memory: later epochs read the records from memory") != std::string::npos);
  const Run want = take(*plain, 12);  // three epochs of 24 records
  Run got = take(*cached, 4);         // the first epoch reads (and caches) every file
  for (int f = 0; f < 4; ++f) fs::remove(shards.file(f));
  const Run rest = take(*cached, 8);
  got.ids.insert(got.ids.end(), rest.ids.begin(), rest.ids.end());
  got.features.insert(got.features.end(), rest.features.begin(), rest.features.end());
  got.states.insert(got.states.end(), rest.states.begin(), rest.states.end());
  CHECK(got.ids == want.ids);
  CHECK(got.features == want.features);
  CHECK(got.states == want.states);  // the same positions (offsets of the cached records)
  CHECK_FALSE(make_input(stream_spec(shards), InputOptions{"", 6, 5, "data.train"}).ok());  // the files are gone

  SUBCASE("the cache counts against max_buffer_mb") {
    DataSourceSpec small = stream_spec(shards);
    small.cache = "memory";
    small.where = "job.yaml:9:10";
    small.max_buffer_mb = 1;
    const fs::path big = shards.dir / "big.tfrecord";
    std::string framed;
    std::vector<float> image(64 << 10, 3.0f);
    const float label = 1;
    for (int r = 0; r < 6; ++r) append_tfrecord(framed, encode_example(image.data(), image.size(), true, &label, 1, true));
    REQUIRE(write_tfrecord_file(big.string(), framed, false).ok());
    small.files = {big.string()};
    small.features[0].shape = {256, 256, 1};
    small.prefetch = 0;
    auto in = input(small, 1);
    Result<std::optional<Batch>> b = std::optional<Batch>();
    for (int i = 0; i < 6 && b.ok(); ++i) b = in->next();
    REQUIRE_FALSE(b.ok());
    CHECK(b.error().message ==
          "job.yaml:9:10: data.train: max_buffer_mb 1 exceeded: the shuffle buffer and the cache may hold 0.2 MiB of "
          "records besides 0.8 MiB of decoded batches and open files; lower shuffle, use cache: none or raise "
          "max_buffer_mb (cache: memory reached 0.3 MiB: 0 records in the shuffle buffer, 0.2 MiB of cached records)");
  }
}

TEST_CASE("stream: cache memory needs a streamed input") {
  Shards shards;
  DataSourceSpec spec = stream_spec(shards);
  spec.stream = false;
  spec.cache = "memory";
  CHECK(input_error(spec, 4).message == "data.train: cache: memory applies to streamed input, and this one is read "
                                        "whole (stream: false); a source read whole is held in memory already");
  spec.stream = std::nullopt;  // auto, with what only reading whole does
  spec.skip = 3;
  CHECK(input_error(spec, 4).message == "data.train: cache: memory applies to streamed input, and this one is read "
                                        "whole (stream: auto: skip and take count the examples of the whole data "
                                        "set); a source read whole is held in memory already");
}

}  // namespace
}  // namespace dtrain
