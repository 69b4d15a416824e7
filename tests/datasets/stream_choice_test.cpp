// data.*.stream resolved: auto streams tfrecord unless the job needs what
// only reading whole does, the other formats are read whole, and the
// start-up line says which and why (with the warnings when data may not fit).
#include <doctest.h>

#include "datasets/stream_choice.hpp"

namespace dtrain {
namespace {

DataSourceSpec tfrecord() {
  DataSourceSpec spec;
  spec.format = "tfrecord";
  return spec;
}

const InputOptions kOne{"", 32, 0, "data.train"};

std::string line(const DataSourceSpec& spec, std::optional<DataSize> size, std::optional<int64_t> room,
                 const InputOptions& options = kOne) {
  return describe_stream_choice(spec, options, size, room, "MemAvailable");
}

constexpr int64_t kMiB = 1 << 20;

TEST_CASE("stream choice: auto streams tfrecord unless skip, take, several inputs or int32 ids") {
  DataSourceSpec spec = tfrecord();
  CHECK(resolves_to_stream(spec, kOne));
  spec.cache = "memory";  // streamed from the records kept in memory
  CHECK(resolves_to_stream(spec, kOne));
  spec.skip = 5;
  CHECK_FALSE(resolves_to_stream(spec, kOne));
  CHECK(stream_reason(spec, kOne) == "stream: auto: skip and take count the examples of the whole data set");
  spec.skip = 0;
  spec.take = 100;
  CHECK(stream_obstacle(spec, kOne) == StreamObstacle::kSkipTake);
  spec.take.reset();
  InputOptions ids = kOne;
  ids.feature_dtype = DType::i32;
  CHECK_FALSE(resolves_to_stream(spec, ids));
  InputOptions two = kOne;
  two.input_names = {"a", "b"};
  CHECK(stream_obstacle(spec, two) == StreamObstacle::kInputs);
  CHECK(stream_reason(spec, two) == "stream: auto: streaming reads one float32 model input so far");
  spec.stream = false;
  CHECK_FALSE(resolves_to_stream(spec, kOne));
  spec.stream = true;  // as written, whatever stands in the way (make_stream_input says what)
  CHECK(resolves_to_stream(spec, two));

  for (const char* format : {"idx", "npy", "npz", "text", "image_folder", "synthetic"}) {
    DataSourceSpec other;
    other.format = format;
    CHECK_FALSE(resolves_to_stream(other, kOne));
    CHECK(stream_obstacle(other, kOne) == StreamObstacle::kFormat);
  }
}

TEST_CASE("stream choice: csv reads its rows as training goes when its file passes a quarter of memory") {
  DataSourceSpec spec;
  spec.format = "csv";
  spec.path = "big.csv";
  CHECK(streams_by_itself("csv"));
  CHECK_FALSE(resolves_to_stream(spec, kOne));  // never make_stream_input's path: the loader reads its rows
  CHECK_FALSE(reads_as_training_goes(spec, 250, int64_t{1000}));
  CHECK(reads_as_training_goes(spec, 251, int64_t{1000}));
  const DataSize file{1, 100 * kMiB};
  CHECK(line(spec, file, 300 * kMiB) == "data.train: 1 csv file, 100.0 MiB: rows read from the file as training goes "
                                        "(stream: auto: more than a quarter of the 300.0 MiB of memory available "
                                        "(MemAvailable))");
  CHECK(line(spec, file, 800 * kMiB) == "data.train: 1 csv file, 100.0 MiB: columns held in memory (stream: auto: at "
                                        "most a quarter of the 800.0 MiB of memory available (MemAvailable))");
  spec.stream = true;
  CHECK(line(spec, file, 800 * kMiB) ==
        "data.train: 1 csv file, 100.0 MiB: rows read from the file as training goes (stream: true)");
  spec.path = "big.csv.gz";
  CHECK(line(spec, file, 300 * kMiB) ==
        "data.train: 1 csv file, 100.0 MiB: columns held in memory (a gzip file is read whole)");
}

TEST_CASE("stream choice: the start-up line") {
  DataSourceSpec spec = tfrecord();
  const DataSize files{8, 320 * kMiB};
  CHECK(line(spec, files, 20000 * kMiB) == "data.train: 8 tfrecord files, 320.0 MiB: streaming (stream: auto: format "
                                           "tfrecord streams)");
  // Streaming holds its buffers only: no warning however little memory there is.
  CHECK(line(spec, files, 100 * kMiB) == line(spec, files, 20000 * kMiB));
  CHECK(line(spec, DataSize{1, kMiB / 2}, std::nullopt) ==
        "data.train: 1 tfrecord file, 0.5 MiB: streaming (stream: auto: format tfrecord streams)");

  spec.cache = "memory";
  CHECK(line(spec, files, 20000 * kMiB) == "data.train: 8 tfrecord files, 320.0 MiB: streaming, the encoded records "
                                           "kept in memory once read (stream: auto: format tfrecord streams)");
  CHECK(line(spec, files, 600 * kMiB) ==
        "data.train: 8 tfrecord files, 320.0 MiB: streaming, the encoded records kept in memory once read (stream: "
        "auto: format tfrecord streams); its 320.0 MiB of records may not fit in the cache, more than half the 600.0 "
        "MiB of memory available (MemAvailable): cache: none reads the files every epoch");
  spec.cache = "none";

  spec.stream = false;
  CHECK(line(spec, files, 20000 * kMiB) == "data.train: 8 tfrecord files, 320.0 MiB: read whole (stream: false)");
  CHECK(line(spec, files, 2048 * kMiB) ==
        "data.train: 8 tfrecord files, 320.0 MiB: read whole (stream: false); as float32 it holds about 4 x its "
        "320.0 MiB on disk, more than half the 2.0 GiB of memory available (MemAvailable): stream: auto "
        "streams it");
  spec.stream = true;
  CHECK(line(spec, files, 20000 * kMiB) == "data.train: 8 tfrecord files, 320.0 MiB: streaming (stream: true)");

  spec.stream.reset();
  spec.take = 10;
  CHECK(line(spec, files, 2048 * kMiB) ==
        "data.train: 8 tfrecord files, 320.0 MiB: read whole (stream: auto: skip and take count the examples of the "
        "whole data set); as float32 it holds about 4 x its 320.0 MiB on disk, more than half the 2.0 GiB of memory "
        "available (MemAvailable): split the files instead of skip and take, and it streams");

  DataSourceSpec idx;
  idx.format = "idx";
  CHECK(line(idx, DataSize{2, 50 * kMiB}, 20000 * kMiB) ==
        "data.train: 2 idx files, 50.0 MiB: read whole (stream: auto: format idx does not stream)");
  CHECK(line(idx, DataSize{2, 3 * 1024 * kMiB}, 20000 * kMiB) ==
        "data.train: 2 idx files, 3.0 GiB: read whole (stream: auto: format idx does not stream); as float32 it "
        "holds about 4 x its 3.0 GiB on disk, more than half the 19.5 GiB of memory available "
        "(MemAvailable): dtrain data convert writes it as tfrecord shards, which stream");

  DataSourceSpec folder;
  folder.format = "image_folder";
  CHECK(line(folder, std::nullopt, 100 * kMiB) ==
        "data.train: format image_folder: images decoded batch by batch (stream: auto: format image_folder holds its "
        "list of files, not the images)");
  DataSourceSpec synthetic;
  synthetic.format = "synthetic";
  CHECK(line(synthetic, std::nullopt, 100 * kMiB).empty());
}

}  // namespace
}  // namespace dtrain
