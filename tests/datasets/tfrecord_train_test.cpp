// The same training on the first 512 MNIST sample digits read as IDX, CSV,
// NPY and TFRecord (plain and GZIP shards) gives identical variables
// after 50 steps: every source decodes to the same examples in the same order.
#include <doctest.h>

#include <fmt/format.h>

#include <fstream>

#include "../config_schema/job_test_util.hpp"
#include "data_test_util.hpp"
#include "datasets/example_convert.hpp"
#include "engine/io/checkpoint.hpp"
#include "estimator/estimator.hpp"

namespace dtrain {
namespace {

// The job with model_dir `model_dir` and data.train `source` (flow-mapping entries).
std::string job_text(const std::string& model_dir, const std::string& source) {
  return "model:\n"
         "  input: {shape: [28, 28, 1]}\n"
         "  layers:\n"
         "    - {type: flatten}\n"
         "    - {type: dense, units: 16, activation: relu}\n"
         "    - {type: dense, units: 10}\n"
         "  loss: sparse_softmax_cross_entropy\n"
         "optimizer: {type: adam, learning_rate: 0.01}\n"
         "run: {model_dir: \"" + model_dir + "\", max_steps: 50, save_checkpoints_steps: 50, save_summary_steps: 1000,\n"
         "      log_step_count_steps: 1000, seed: 7}\n"
         "data:\n"
         "  train: {" + source + ", batch_size: 32, shuffle: 200, seed: 11, scale: 0.00392156862745098}\n";
}

// Trains job_text() with `source` (paths relative to `base`) into `model_dir`
// and returns the final checkpoint.
CheckpointData train_with(const std::string& source, const std::string& base, const std::string& model_dir) {
  const std::string yaml = job_text(model_dir, source);
  auto job = load_job_from_string(yaml, "job.yaml", base, testing::options_with_env());
  REQUIRE_MESSAGE(job.ok(), job.error().message);
  EstimatorOptions options;
  options.log_format = LogFormat::kPlain;
  std::FILE* devnull = std::fopen("/dev/null", "w");
  options.log = devnull;
  auto est = Estimator::create(*job, options);
  REQUIRE_MESSAGE(est.ok(), est.error().message);
  Status trained = (*est)->train(false);
  std::fclose(devnull);
  REQUIRE_MESSAGE(trained.ok(), trained.error().message);
  auto path = latest_checkpoint(model_dir);
  REQUIRE(path.has_value());
  auto ckpt = load_checkpoint(*path);
  REQUIRE_MESSAGE(ckpt.ok(), ckpt.error().message);
  CHECK(ckpt->global_step == 50);
  return std::move(ckpt.value());
}

TEST_CASE("formats: IDX, CSV, NPY and TFRecord train to identical variables after 50 steps") {
  data_testing::TempDir dir;
  const std::string images = data_testing::sample_file("images-idx3-ubyte.gz");
  const std::string labels = data_testing::sample_file("labels-idx1-ubyte.gz");
  DataSourceSpec spec;
  spec.format = "idx";
  spec.images = images;
  spec.labels = labels;
  auto idx = load_source(spec, SourceContext{});
  REQUIRE_MESSAGE(idx.ok(), idx.error().message);
  std::vector<int64_t> first(512);
  for (size_t i = 0; i < first.size(); ++i) first[i] = static_cast<int64_t>(i);
  const Batch b = (*idx)->gather(first, 1.0f);
  const SourcePtr sample = make_tensor_source(b.features, b.labels, "mnist[:512]");

  // CSV: a header p0..p783,label and one row per digit.
  {
    std::ofstream csv(dir.file("mnist.csv"));
    for (int k = 0; k < 784; ++k) csv << "p" << k << ",";
    csv << "label\n";
    for (size_t i = 0; i < 512; ++i) {
      for (size_t k = 0; k < 784; ++k) csv << b.features.data()[i * 784 + k] << ",";
      csv << b.labels.data()[i] << "\n";
    }
  }
  ConvertOptions o;
  o.out_dir = dir.file("tf");
  o.shards = 4;
  REQUIRE(convert_source(*sample, o).ok());
  o.out_dir = dir.file("tfgz");
  o.gzip = true;
  REQUIRE(convert_source(*sample, o).ok());
  o.out_dir = dir.file("npy");
  o.to = "npy";
  REQUIRE(convert_source(*sample, o).ok());

  // Read whole (stream: false), the examples come in the order the other formats give them.
  const std::string tf_features =
      "features: {image: {dtype: bytes, decode: raw_uint8, shape: [28, 28, 1]}, label: {dtype: int64, shape: []}}, "
      "label_feature: label, stream: false";
  const std::vector<std::pair<std::string, std::string>> sources = {
      {"idx", fmt::format("format: idx, images: \"{}\", labels: \"{}\", take: 512", images, labels)},
      {"csv", "format: csv, path: mnist.csv, label_column: label, feature_shape: [28, 28, 1]"},
      {"npy", "format: npy, images: npy/data-images.npy, labels: npy/data-labels.npy"},
      {"tfrecord", "format: tfrecord, files: \"tf/data-*.tfrecord\", " + tf_features},
      {"tfrecord gzip", "format: tfrecord, files: \"tfgz/data-*.tfrecord\", compression: gzip, " + tf_features},
  };
  const CheckpointData want = train_with(sources[0].second, dir.dir(), dir.file("run-idx"));
  REQUIRE(!want.tensors.empty());
  for (size_t s = 1; s < sources.size(); ++s) {
    INFO(sources[s].first);
    const CheckpointData got = train_with(sources[s].second, dir.dir(), dir.file("run-" + std::to_string(s)));
    REQUIRE(got.tensors.size() == want.tensors.size());
    for (size_t t = 0; t < want.tensors.size(); ++t) {
      INFO(want.tensors[t].first);
      CHECK(got.tensors[t].first == want.tensors[t].first);
      CHECK(got.tensors[t].second.to_vector() == want.tensors[t].second.to_vector());
    }
  }
  // Control: other examples (shifted by one) give other variables, so the comparison above means something.
  const CheckpointData shifted = train_with(sources[0].second + ", skip: 1", dir.dir(), dir.file("run-shifted"));
  REQUIRE(shifted.tensors.size() == want.tensors.size());
  CHECK(shifted.tensors[0].second.to_vector() != want.tensors[0].second.to_vector());
}

}  // namespace
}  // namespace dtrain
