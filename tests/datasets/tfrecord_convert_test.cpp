// `dtrain data convert` and `inspect`: the first 512 MNIST sample digits
// converted to TFRecord shards and to NPY decode to exactly the IDX source's
// features and labels; the CLI wiring of add_data_subcommands.
#include <doctest.h>

#include <fmt/format.h>

#include "cli/data_commands.hpp"
#include "data_test_util.hpp"
#include "tfrecord_test_util.hpp"
#include "datasets/example_convert.hpp"
#include "datasets/tfrecord_file.hpp"

namespace dtrain {
namespace {

SourcePtr mnist_first_512() {
  DataSourceSpec spec;
  spec.format = "idx";
  spec.images = data_testing::sample_file("images-idx3-ubyte.gz");
  spec.labels = data_testing::sample_file("labels-idx1-ubyte.gz");
  auto idx = load_source(spec, SourceContext{});
  REQUIRE_MESSAGE(idx.ok(), idx.error().message);
  std::vector<int64_t> first(512);
  for (int64_t i = 0; i < 512; ++i) first[static_cast<size_t>(i)] = i;
  Batch b = (*idx)->gather(first, 1.0f);
  return make_tensor_source(std::move(b.features), std::move(b.labels), "mnist[:512]");
}

void check_same(const ExampleSource& a, const ExampleSource& b) {
  REQUIRE(a.size() == b.size());
  CHECK(a.feature_shape() == b.feature_shape());
  CHECK(a.label_shape() == b.label_shape());
  std::vector<int64_t> all(static_cast<size_t>(a.size()));
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int64_t>(i);
  const Batch x = a.gather(all, 1.0f), y = b.gather(all, 1.0f);
  CHECK(x.features.to_vector() == y.features.to_vector());
  CHECK(x.labels.to_vector() == y.labels.to_vector());
}

TEST_CASE("convert: MNIST sample to TFRecord shards and NPY reads back exactly") {
  const SourcePtr idx = mnist_first_512();
  data_testing::TempDir dir;
  for (bool gzip : {false, true}) {
    ConvertOptions o;
    o.out_dir = dir.file(gzip ? "gz" : "plain");
    o.name = "mnist";
    o.shards = 3;
    o.gzip = gzip;
    auto r = convert_source(*idx, o);
    REQUIRE_MESSAGE(r.ok(), r.error().message);
    REQUIRE(r->files.size() == 3);
    CHECK(r->files[2] == o.out_dir + "/mnist-00002-of-00003.tfrecord");
    CHECK(r->examples == 512);
    CHECK(r->spec == fmt::format("{{format: tfrecord, files: \"{}/mnist-*-of-00003.tfrecord\", compression: {}, "
                                 "features: {{image: {{dtype: bytes, decode: raw_uint8, shape: [28, 28, 1]}}, "
                                 "label: {{dtype: int64, shape: []}}}}, label_feature: label}}",
                                 o.out_dir, gzip ? "gzip" : "none"));
    DataSourceSpec spec;
    spec.format = "tfrecord";
    spec.files = {o.out_dir + "/mnist-*.tfrecord"};
    FeatureSpec image, label;
    image.name = "image";
    image.dtype = "bytes";
    image.decode = "raw_uint8";
    image.shape = {28, 28, 1};
    label.name = "label";
    label.dtype = "int64";
    spec.features = {image, label};
    spec.label_feature = "label";
    auto back = load_source(spec, SourceContext{});
    REQUIRE_MESSAGE(back.ok(), back.error().message);
    check_same(*idx, **back);
  }
  ConvertOptions o;
  o.out_dir = dir.file("npy");
  o.to = "npy";
  auto r = convert_source(*idx, o);
  REQUIRE_MESSAGE(r.ok(), r.error().message);
  DataSourceSpec spec;
  spec.format = "npy";
  spec.images = r->files[0];
  spec.labels = r->files[1];
  auto back = load_source(spec, SourceContext{});
  REQUIRE_MESSAGE(back.ok(), back.error().message);
  check_same(*idx, **back);
}

TEST_CASE("convert: non-pixel features and targets become float lists") {
  Tensor f = Tensor::from({3, 2}, {0.5f, 1.0f, -2.0f, 3.0f, 4.0f, 5.0f});
  Tensor l = Tensor::from({3, 2}, {1.0f, 0.25f, 2.0f, 3.0f, 4.0f, 5.0f});
  const SourcePtr src = make_tensor_source(f, l, "t");
  data_testing::TempDir dir;
  ConvertOptions o;
  o.out_dir = dir.dir();
  auto r = convert_source(*src, o);
  REQUIRE_MESSAGE(r.ok(), r.error().message);
  auto text = inspect_tfrecord(r->files[0], 1, 8);
  REQUIRE_MESSAGE(text.ok(), text.error().message);
  // 48 bytes: the size TensorFlow serializes this Example to.
  CHECK(*text == r->files[0] + ": 3 records\nrecord 0 (48 bytes):\n  image: float[2] 0.5 1\n  label: float[2] 1 0.25\n");
  o.shards = 0;
  CHECK(convert_source(*src, o).error().message == "convert: --shards must be >= 1, got 0");
}

// The `data` subcommand as cli/commands.cpp declares it.
CLI::App* add_data(CLI::App& app, int& code) {
  CLI::App* data = app.add_subcommand("data");
  cli::add_data_subcommands(*data, code);
  return data;
}

TEST_CASE("tfrecord: decoding on several threads gives the serial result and the same first error") {
  const SourcePtr idx = mnist_first_512();
  data_testing::TempDir dir;
  ConvertOptions o;
  o.out_dir = dir.file("one");
  o.name = "mnist";
  REQUIRE(convert_source(*idx, o).ok());
  DataSourceSpec spec;
  spec.format = "tfrecord";
  spec.files = {o.out_dir + "/mnist-*.tfrecord"};
  spec.features = {data_testing::feature("image", "bytes", {28, 28, 1}, "raw_uint8"),
                   data_testing::feature("label", "int64", {})};
  spec.label_feature = "label";
  spec.num_parallel_calls = 1;
  auto serial = load_source(spec, SourceContext{});
  REQUIRE_MESSAGE(serial.ok(), serial.error().message);
  spec.num_parallel_calls = 4;
  auto parallel = load_source(spec, SourceContext{});
  REQUIRE_MESSAGE(parallel.ok(), parallel.error().message);
  check_same(**serial, **parallel);
  check_same(*idx, **parallel);

  // Every record is wrong for this shape: the error names record 0 on any thread count.
  spec.features[0].shape = {28, 27, 1};
  for (int64_t threads : {1, 4}) {
    spec.num_parallel_calls = threads;
    auto bad = load_source(spec, SourceContext{});
    REQUIRE_FALSE(bad.ok());
    CHECK(bad.error().message.rfind(o.out_dir + "/mnist-00000-of-00001.tfrecord: record 0: ", 0) == 0);
  }
}

TEST_CASE("data commands: convert and inspect through CLI11") {
  data_testing::TempDir dir;
  int code = -1;
  CLI::App app;
  CLI::App* data = add_data(app, code);
  const std::string images = data_testing::sample_file("images-idx3-ubyte.gz");
  const std::string labels = data_testing::sample_file("labels-idx1-ubyte.gz");
  app.parse(fmt::format("data convert --format idx --images {} --labels {} --out {} --name d --shards 2 --gzip",
                        images, labels, dir.dir()),
            false);
  CHECK(data->parsed());
  CHECK(code == 0);
  auto file = read_tfrecord_file(dir.file("d-00001-of-00002.tfrecord"), TfRecordCompression::kGzip, false);
  REQUIRE_MESSAGE(file.ok(), file.error().message);
  CHECK(file->records.size() == 5000);

  CLI::App app2;
  add_data(app2, code);
  code = -1;
  app2.parse("data inspect --records 3 --values 1 " + dir.file("d-00000-of-00002.tfrecord"), false);
  CHECK(code == 0);

  CLI::App app3;
  add_data(app3, code);
  app3.parse("data inspect " + dir.file("missing.tfrecord"), false);
  CHECK(code == 3);
}

}  // namespace
}  // namespace dtrain
