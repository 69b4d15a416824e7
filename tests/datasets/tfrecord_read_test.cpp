// Reading TFRecord files written by TensorFlow (tests/data/gen_tfrecords.py):
// plain, GZIP, a glob of mixed shards; every decoded value is checked.
#include <doctest.h>

#include "data_test_util.hpp"
#include "datasets/file_glob.hpp"
#include "datasets/tfrecord_file.hpp"
#include "datasets/tfrecord_source.hpp"
#include "tfrecord_test_util.hpp"

namespace dtrain {
namespace {

using data_testing::check_examples;
using data_testing::expected_examples;
using data_testing::generated_spec;
using data_testing::tfrecord_dir;

TEST_CASE("tfrecord: files written by TensorFlow decode to the generator's values") {
  SUBCASE("plain, compression auto") {
    auto load = load_tfrecord_examples(generated_spec(tfrecord_dir() + "/plain.tfrecord"), SourceContext{});
    REQUIRE_MESSAGE(load.ok(), load.error().message);
    CHECK(load->skipped_records == 0);
    CHECK(load->source->feature_shape() == Shape{14});
    CHECK(load->source->label_shape() == Shape{});
    check_examples(*load->source, expected_examples("plain.tfrecord"));
  }
  SUBCASE("plain, compression none") {
    auto load = load_tfrecord_examples(generated_spec(tfrecord_dir() + "/plain.tfrecord", "none"), SourceContext{});
    REQUIRE_MESSAGE(load.ok(), load.error().message);
    check_examples(*load->source, expected_examples("plain.tfrecord"));
  }
  SUBCASE("GZIP, compression gzip and auto") {
    for (const char* c : {"gzip", "auto"}) {
      auto load = load_tfrecord_examples(generated_spec(tfrecord_dir() + "/gzip.tfrecord.gz", c), SourceContext{});
      REQUIRE_MESSAGE(load.ok(), load.error().message);
      check_examples(*load->source, expected_examples("gzip.tfrecord.gz"));
    }
  }
  SUBCASE("a glob relative to base_dir: shards in name order, one plain and one GZIP") {
    auto load = load_tfrecord_examples(generated_spec("shard-*-of-00002.tfrecord"), SourceContext{tfrecord_dir(), ""});
    REQUIRE_MESSAGE(load.ok(), load.error().message);
    auto want = expected_examples("shard-00000-of-00002.tfrecord");
    auto second = expected_examples("shard-00001-of-00002.tfrecord");
    want.insert(want.end(), second.begin(), second.end());
    check_examples(*load->source, want);
    CHECK(load->source->file_starts() == std::vector<int64_t>{0, 5});
  }
  SUBCASE("through the format table, with a single input feature keeping its shape") {
    DataSourceSpec spec = generated_spec(tfrecord_dir() + "/plain.tfrecord");
    spec.features = {spec.features[0], spec.features[1]};  // image, label
    auto source = load_source(spec, SourceContext{});
    REQUIRE_MESSAGE(source.ok(), source.error().message);
    CHECK((*source)->feature_shape() == Shape{2, 3, 1});
    const Batch b = (*source)->gather({4, 0}, 0.5f);
    const auto want = expected_examples("plain.tfrecord");
    for (size_t k = 0; k < 6; ++k) {
      CHECK(b.features.data()[k] == want[4].features[k] * 0.5f);
      CHECK(b.features.data()[6 + k] == want[0].features[k] * 0.5f);
    }
    CHECK(b.labels.data()[0] == want[4].label);
  }
}

TEST_CASE("tfrecord: PNG-encoded features written by TensorFlow (tf.io.encode_png)") {
  DataSourceSpec spec;
  spec.format = "tfrecord";
  spec.files = {tfrecord_dir() + "/png.tfrecord"};
  spec.features = {data_testing::feature("gray", "bytes", {4, 5, 1}, "png"),
                   data_testing::feature("rgb", "bytes", {3, 2, 3}, "png"), data_testing::feature("label", "int64", {})};
  spec.label_feature = "label";
  auto load = load_tfrecord_examples(spec, SourceContext{});
  REQUIRE_MESSAGE(load.ok(), load.error().message);
  CHECK(load->source->feature_shape() == Shape{38});
  check_examples(*load->source, expected_examples("png.tfrecord"));

  SUBCASE("a PNG of another size") {
    spec.features[0].shape = {5, 4, 1};
    auto r = load_tfrecord_examples(spec, SourceContext{});
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message == spec.files[0] + ": record 0: feature \"gray\": PNG is 4x5 (height x width) but the shape needs 5x4");
  }
  SUBCASE("bytes that are not a PNG") {
    DataSourceSpec raw = data_testing::generated_spec(tfrecord_dir() + "/plain.tfrecord");
    raw.features[0] = data_testing::feature("image", "bytes", {2, 3, 1}, "png");
    auto r = load_tfrecord_examples(raw, SourceContext{});
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().kind == ErrorKind::kData);
    CHECK(r.error().message == raw.files[0] + ": record 0: feature \"image\": not a PNG image (read beyond end of data)");
  }
  SUBCASE("a png shape without channels is a config error") {
    spec.features[1].shape = {3, 2};
    auto r = load_tfrecord_examples(spec, SourceContext{"", "p: "});
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message == "p: features.rgb: decode png needs a fixed shape [height, width, channels] with 1-4 channels, got [3, 2]");
  }
}

TEST_CASE("tfrecord: compression mismatches are data errors") {
  auto wrong = load_tfrecord_examples(generated_spec(tfrecord_dir() + "/plain.tfrecord", "gzip"), SourceContext{});
  REQUIRE_FALSE(wrong.ok());
  CHECK(wrong.error().kind == ErrorKind::kData);
  CHECK(wrong.error().message ==
        tfrecord_dir() + "/plain.tfrecord: compression is gzip but the file does not start with the gzip magic bytes 1f 8b");
  auto raw = load_tfrecord_examples(generated_spec(tfrecord_dir() + "/gzip.tfrecord.gz", "none"), SourceContext{});
  REQUIRE_FALSE(raw.ok());
  CHECK(raw.error().message == tfrecord_dir() + "/gzip.tfrecord.gz: record 0 at offset 0: length CRC mismatch");
}

TEST_CASE("tfrecord: file globs are sorted and must match something") {
  data_testing::TempDir dir;
  for (const char* n : {"b-1.rec", "a-2.rec", "a-10.rec", "other.txt", ".hidden.rec"}) data_testing::write_text(dir.file(n), "x");
  auto files = glob_files(dir.file("*.rec"));
  REQUIRE(files.ok());
  CHECK(*files == std::vector<std::string>{dir.file("a-10.rec"), dir.file("a-2.rec"), dir.file("b-1.rec")});
  auto one = glob_files(dir.file("other.txt"));
  REQUIRE(one.ok());
  CHECK(one->size() == 1);
  auto none = glob_files(dir.file("*.tfrecord"));
  REQUIRE_FALSE(none.ok());
  CHECK(none.error().message == dir.file("*.tfrecord") + ": no file matches");
  auto in_dir = glob_files(dir.dir() + "/*/x.rec");
  REQUIRE_FALSE(in_dir.ok());
  CHECK(in_dir.error().message == dir.dir() + "/*/x.rec: wildcards are allowed only in the file name, not in directories");
}

TEST_CASE("tfrecord: records written by append_tfrecord read back, GZIP or not") {
  data_testing::TempDir dir;
  std::string framed;
  const std::vector<std::string> records = {"", "a", std::string(1000, 'z'), std::string("\0\1\2", 3)};
  for (const std::string& r : records) append_tfrecord(framed, r);
  for (bool gz : {false, true}) {
    const std::string path = dir.file(gz ? "r.gz" : "r");
    REQUIRE(write_tfrecord_file(path, framed, gz).ok());
    auto file = read_tfrecord_file(path, TfRecordCompression::kAuto, false);
    REQUIRE_MESSAGE(file.ok(), file.error().message);
    REQUIRE(file->records.size() == records.size());
    for (size_t i = 0; i < records.size(); ++i) CHECK(std::string(file->records[i]) == records[i]);
  }
}

}  // namespace
}  // namespace dtrain
