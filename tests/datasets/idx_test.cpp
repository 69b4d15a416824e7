// IDX source: the real MNIST files against checksums computed independently
// (tests/datasets/reference/mnist_checksums.py), raw vs gzip, generic dtypes.
#include <doctest.h>
#include <zlib.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "data_test_util.hpp"
#include "datasets/pipeline.hpp"

namespace dtrain {
namespace {

using data_testing::TempDir;

nlohmann::json reference() {
  std::ifstream f(DTRAIN_SOURCE_ROOT "/tests/datasets/reference/mnist_checksums.json");
  REQUIRE(f.good());
  return nlohmann::json::parse(f);
}

DataSourceSpec idx_spec(const std::string& images, const std::string& labels) {
  DataSourceSpec s;
  s.format = "idx";
  s.images = images;
  s.labels = labels;
  s.repeat = false;
  s.prefetch = 0;
  return s;
}

// The whole file as one batch.
Batch load_all(const DataSourceSpec& spec, int64_t batch = 10000) {
  auto input = make_input(spec, InputOptions{"", batch, 0});
  REQUIRE_MESSAGE(input.ok(), input.error().message);
  auto b = (*input)->next();
  REQUIRE(b.ok());
  REQUIRE(b->has_value());
  return std::move(**b);
}

void check_against_reference(const Batch& b, const nlohmann::json& ref) {
  const int64_t n = ref["count"], rows = ref["rows"], cols = ref["cols"];
  REQUIRE(b.features.shape() == Shape{n, rows, cols, 1});
  REQUIRE(b.labels.shape() == Shape{n});
  int64_t sum = 0, weighted = 0, not_whole = 0;
  for (int64_t i = 0; i < b.features.numel(); ++i) {
    const auto px = static_cast<int64_t>(b.features[i]);
    not_whole += static_cast<float>(px) != b.features[i];  // raw uint8 pixels are whole numbers
    sum += px;
    weighted += px * (i % 1000003);
  }
  CHECK(not_whole == 0);
  CHECK(sum == ref["pixel_sum"].get<int64_t>());
  CHECK(weighted == ref["weighted_pixel_sum"].get<int64_t>());
  std::vector<int64_t> counts(10, 0);
  for (int64_t i = 0; i < n; ++i) counts[static_cast<size_t>(b.labels[i])]++;
  CHECK(counts == ref["label_counts"].get<std::vector<int64_t>>());
  for (int64_t i = 0; i < 10; ++i) CHECK(b.labels[i] == ref["first_labels"][static_cast<size_t>(i)].get<float>());
  CHECK(b.labels[n - 1] == ref["last_label"].get<float>());
  const auto row = ref["image7_row14"].get<std::vector<float>>();
  for (int64_t c = 0; c < cols; ++c) CHECK(b.features[(7 * rows + 14) * cols + c] == row[static_cast<size_t>(c)]);
  CHECK(b.ids.size() == static_cast<size_t>(n));
  CHECK(b.ids.front() == 0);
  CHECK(b.ids.back() == n - 1);
}

// Writes `bytes` gzip-compressed with zlib's gzip writer.
void write_gzip(const std::string& path, const std::vector<uint8_t>& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  REQUIRE(f != nullptr);
  REQUIRE(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())) == static_cast<int>(bytes.size()));
  REQUIRE(gzclose(f) == Z_OK);
}

std::vector<uint8_t> gunzip_file(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  REQUIRE(f != nullptr);
  std::vector<uint8_t> out;
  uint8_t buf[1 << 16];
  int n = 0;
  while ((n = gzread(f, buf, sizeof(buf))) > 0) out.insert(out.end(), buf, buf + n);
  gzclose(f);
  return out;
}

TEST_CASE("idx: the 10,000-digit MNIST sample matches the NumPy reference") {
  const Batch b = load_all(idx_spec(data_testing::sample_file("images-idx3-ubyte.gz"), data_testing::sample_file("labels-idx1-ubyte.gz")));
  const auto ref = reference()["train_sample"];
  // Class counts as published in ../shared/data/README.md.
  CHECK(ref["label_counts"].get<std::vector<int64_t>>() ==
        std::vector<int64_t>{1001, 1127, 991, 1032, 980, 863, 1014, 1070, 944, 978});
  check_against_reference(b, ref);
}

TEST_CASE("idx: the official MNIST test set (read from ../shared) matches the NumPy reference") {
  if (!dtrain::testing::have_shared_mnist()) return;
  const Batch b = load_all(idx_spec(data_testing::t10k_file("images-idx3-ubyte.gz"), data_testing::t10k_file("labels-idx1-ubyte.gz")));
  check_against_reference(b, reference()["t10k"]);
}

TEST_CASE("idx: raw and gzip files load identically; relative paths resolve against base_dir") {
  const auto mnist = data_testing::t10k_or_sample();  // both hold 10,000 digits
  TempDir tmp;
  data_testing::write_bytes(tmp.file("images.idx"), gunzip_file(mnist.images));
  data_testing::write_bytes(tmp.file("labels.idx"), gunzip_file(mnist.labels));
  const Batch gz = load_all(idx_spec(mnist.images, mnist.labels));
  DataSourceSpec raw_spec = idx_spec("images.idx", "labels.idx");
  auto input = make_input(raw_spec, InputOptions{tmp.dir(), 10000, 0});
  REQUIRE_MESSAGE(input.ok(), input.error().message);
  const Batch raw = std::move(*(*input)->next().value());
  CHECK(raw.features.to_vector() == gz.features.to_vector());
  CHECK(raw.labels.to_vector() == gz.labels.to_vector());
  CHECK((*input)->feature_shape() == Shape{28, 28, 1});
  CHECK((*input)->label_shape() == Shape{});
}

TEST_CASE("idx: a gzip file of several members (cat a.gz b.gz) is read whole") {
  const auto mnist = data_testing::t10k_or_sample();
  TempDir tmp;
  const auto labels = gunzip_file(mnist.labels);
  const size_t half = labels.size() / 2;
  write_gzip(tmp.file("a.gz"), std::vector<uint8_t>(labels.begin(), labels.begin() + static_cast<long>(half)));
  write_gzip(tmp.file("b.gz"), std::vector<uint8_t>(labels.begin() + static_cast<long>(half), labels.end()));
  auto joined = data_testing::read_bytes(tmp.file("a.gz"));
  const auto b = data_testing::read_bytes(tmp.file("b.gz"));
  joined.insert(joined.end(), b.begin(), b.end());
  data_testing::write_bytes(tmp.file("labels.gz"), joined);
  const Batch whole = load_all(idx_spec(mnist.images, tmp.file("labels.gz")));
  const Batch ref = load_all(idx_spec(mnist.images, mnist.labels));
  CHECK(whole.labels.to_vector() == ref.labels.to_vector());
}

TEST_CASE("idx: generic dtypes: int16 and float32 arrays, 2-D labels as targets, scale") {
  TempDir tmp;
  // int16 images (2, 3): values 1, -2, 300, -32768, 0, 7 (big-endian).
  data_testing::write_bytes(tmp.file("x.idx"), {0, 0, 0x0B, 2, 0, 0, 0, 2, 0, 0, 0, 3,
                                           0x00, 0x01, 0xFF, 0xFE, 0x01, 0x2C, 0x80, 0x00, 0x00, 0x00, 0x00, 0x07});
  // float32 labels (2, 2): 0.5, -1, 2, 3 (big-endian IEEE 754).
  data_testing::write_bytes(tmp.file("y.idx"), {0, 0, 0x0D, 2, 0, 0, 0, 2, 0, 0, 0, 2,
                                           0x3F, 0x00, 0, 0, 0xBF, 0x80, 0, 0, 0x40, 0x00, 0, 0, 0x40, 0x40, 0, 0});
  DataSourceSpec spec = idx_spec(tmp.file("x.idx"), tmp.file("y.idx"));
  spec.scale = 0.5;
  const Batch b = load_all(spec, 2);
  CHECK(b.features.shape() == Shape{2, 3});
  CHECK(b.features.to_vector() == std::vector<float>{0.5f, -1.0f, 150.0f, -16384.0f, 0.0f, 3.5f});
  CHECK(b.labels.shape() == Shape{2, 2});
  CHECK(b.labels.to_vector() == std::vector<float>{0.5f, -1.0f, 2.0f, 3.0f});

  // Data errors name the file, the item and the position in it.
  auto input = make_input(spec, InputOptions{"", 2, 0});
  REQUIRE_MESSAGE(input.ok(), input.error().message);
  CHECK((*input)->locate(1, ExampleValue{.position = 2}) == tmp.file("x.idx") + ": item 1, position 2");
  CHECK((*input)->locate(1, ExampleValue{}) == tmp.file("x.idx") + ": item 1");
  CHECK((*input)->locate(0, ExampleValue{.label = true}) == tmp.file("y.idx") + ": item 0");
}

}  // namespace
}  // namespace dtrain
