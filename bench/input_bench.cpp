// input_bench: times dtrain's input pipeline (make_input) reading TFRecord
// files of tf.Example (image bytes + int64 label). Checks the first batch and
// every epoch against an independent reading of the files, then prints JSON.
//   input_bench --files 'DIR/*.tfrecord' --batch 256 --num-parallel-calls 2
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "bench/example_reader.hpp"
#include "datasets/pipeline.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using dtrain::bench::RawExample;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

struct Options {
  std::string files, compression = "auto", image = "image", label = "label";
  std::vector<int64_t> shape{28, 28, 1};
  int64_t batch = 256, num_parallel_calls = 1, prefetch = 2, shuffle = 0, epochs = 5;
  uint64_t seed = 0;
  double scale = 1.0 / 255.0;
};

dtrain::DataSourceSpec make_spec(const Options& o) {
  dtrain::DataSourceSpec spec;
  spec.format = "tfrecord";
  spec.files = {o.files};
  spec.compression = o.compression;
  dtrain::FeatureSpec image, label;
  image.name = o.image;
  image.dtype = "bytes";
  image.decode = "raw_uint8";
  image.shape = o.shape;
  label.name = o.label;
  label.dtype = "int64";
  spec.features = {image, label};
  spec.label_feature = o.label;
  spec.batch_size = o.batch;
  spec.num_parallel_calls = o.num_parallel_calls;
  spec.prefetch = o.prefetch;
  spec.shuffle = o.shuffle;
  spec.seed = o.seed;
  spec.repeat = false;
  spec.scale = o.scale;
  spec.stream = false;  // the in-memory pipeline: its first batch is checked in file order
  return spec;
}

// What one pass over the input delivered.
struct EpochCount {
  int64_t examples = 0, label_sum = 0;
};

dtrain::Batch next_or_throw(dtrain::Input& input, bool* end) {
  auto r = input.next();
  if (!r.ok()) throw std::runtime_error(r.error().message);
  *end = !r->has_value();
  return *end ? dtrain::Batch{} : std::move(**r);
}

void count(const dtrain::Batch& b, EpochCount& c) {
  c.examples += b.size();
  for (int64_t i = 0; i < b.labels.numel(); ++i) c.label_sum += std::llround(b.labels[i]);
}

EpochCount rest_of_epoch(dtrain::Input& input, EpochCount c) {
  for (bool end = false;;) {
    dtrain::Batch b = next_or_throw(input, &end);
    if (end) return c;
    count(b, c);
  }
}

// The first batch against the reference: each row's id names its record; the
// label and every pixel (byte * scale) must match. Returns the bytes' sum.
int64_t verify_first_batch(const dtrain::Batch& b, const std::vector<RawExample>& ref, double scale) {
  if (b.size() == 0 || static_cast<int64_t>(b.ids.size()) != b.size()) throw std::runtime_error("empty first batch");
  const int64_t row = b.features.numel() / b.size();
  int64_t pixel_sum = 0;
  for (int64_t r = 0; r < b.size(); ++r) {
    const int64_t id = b.ids[static_cast<size_t>(r)];
    if (id < 0 || id >= static_cast<int64_t>(ref.size())) throw std::runtime_error("example id out of range");
    const RawExample& e = ref[static_cast<size_t>(id)];
    if (static_cast<int64_t>(e.image.size()) != row) throw std::runtime_error("image size differs from the shape");
    if (std::llround(b.labels[r]) != e.label) {
      throw std::runtime_error("example " + std::to_string(id) + ": label " + std::to_string(b.labels[r]) +
                               ", the file says " + std::to_string(e.label));
    }
    for (int64_t k = 0; k < row; ++k) {
      const auto byte = static_cast<unsigned char>(e.image[static_cast<size_t>(k)]);
      pixel_sum += byte;
      if (std::fabs(b.features[r * row + k] - byte * scale) > 1e-6) {
        throw std::runtime_error("example " + std::to_string(id) + ": pixel " + std::to_string(k) + " is " +
                                 std::to_string(b.features[r * row + k]) + ", the file says " +
                                 std::to_string(byte * scale));
      }
    }
  }
  return pixel_sum;
}

void check_epoch(const EpochCount& got, const EpochCount& want, const std::string& which) {
  if (got.examples != want.examples || got.label_sum != want.label_sum) {
    throw std::runtime_error(which + ": " + std::to_string(got.examples) + " examples with label sum " +
                             std::to_string(got.label_sum) + ", the files hold " + std::to_string(want.examples) +
                             " with label sum " + std::to_string(want.label_sum));
  }
}

nlohmann::json run(const Options& o) {
  const std::vector<RawExample> ref = dtrain::bench::read_examples(o.files, o.image, o.label);
  EpochCount want;
  want.examples = static_cast<int64_t>(ref.size());
  for (const RawExample& e : ref) want.label_sum += e.label;

  // Epoch 1, timed from make_input: opening, reading and decoding the files,
  // then batching. The first batch's check is not timed.
  dtrain::InputOptions io;
  io.global_batch = o.batch;
  io.name = "data.train";
  const auto start = Clock::now();
  auto made = dtrain::make_input(make_spec(o), io);
  if (!made.ok()) throw std::runtime_error(made.error().message);
  dtrain::Input& input = **made;
  const double load = seconds_since(start);
  bool end = false;
  dtrain::Batch first = next_or_throw(input, &end);
  const double to_first = seconds_since(start);
  if (end) throw std::runtime_error("no batches");
  const int64_t first_pixels = verify_first_batch(first, ref, o.scale);
  EpochCount first_count;
  count(first, first_count);
  const int64_t first_labels = first_count.label_sum;
  const auto rest_start = Clock::now();
  const EpochCount e1 = rest_of_epoch(input, first_count);
  const double epoch1 = to_first + seconds_since(rest_start);
  check_epoch(e1, want, "epoch 1");

  // Further epochs: restore(0) starts the input over, as a new epoch would.
  const auto steady_start = Clock::now();
  for (int64_t e = 0; e < o.epochs; ++e) {
    if (dtrain::Status s = input.restore(0); !s) throw std::runtime_error(s.error().message);
    check_epoch(rest_of_epoch(input, EpochCount{}), want, "epoch " + std::to_string(e + 2));
  }
  const double steady = seconds_since(steady_start);

  return {{"pipeline", "dtrain"},
          {"files", o.files},
          {"batch", o.batch},
          {"num_parallel_calls", o.num_parallel_calls},
          {"prefetch", o.prefetch},
          {"shuffle", o.shuffle},
          {"examples_per_epoch", want.examples},
          {"label_sum", want.label_sum},
          {"first_batch", {{"examples", first.size()}, {"label_sum", first_labels}, {"pixel_sum", first_pixels}}},
          {"verified", true},
          {"load_seconds", load},
          {"first_epoch_seconds", epoch1},
          {"first_epoch_examples_per_sec", static_cast<double>(want.examples) / epoch1},
          {"epochs", o.epochs},
          {"seconds", steady},
          {"examples_per_sec", o.epochs > 0 ? static_cast<double>(want.examples * o.epochs) / steady : 0.0}};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Times dtrain's input pipeline on TFRecord files of tf.Example (image bytes + int64 label)"};
  Options o;
  app.add_option("--files", o.files, "glob of the TFRecord files")->required();
  app.add_option("--compression", o.compression, "none | gzip | auto")->capture_default_str();
  app.add_option("--image-feature", o.image, "bytes feature holding the raw uint8 pixels")->capture_default_str();
  app.add_option("--label-feature", o.label, "int64 feature holding the label")->capture_default_str();
  app.add_option("--shape", o.shape, "shape of one image")->delimiter(',')->capture_default_str();
  app.add_option("--batch", o.batch, "batch size")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--num-parallel-calls", o.num_parallel_calls, "threads gathering a batch")->capture_default_str();
  app.add_option("--prefetch", o.prefetch, "batches prepared ahead")->capture_default_str();
  app.add_option("--shuffle", o.shuffle, "shuffle buffer (0: none)")->capture_default_str();
  app.add_option("--seed", o.seed, "shuffle seed")->capture_default_str();
  app.add_option("--scale", o.scale, "pixel scale")->capture_default_str();
  app.add_option("--epochs", o.epochs, "timed epochs after the first")->capture_default_str()->check(CLI::NonNegativeNumber);
  CLI11_PARSE(app, argc, argv);
  try {
    std::printf("%s\n", run(o).dump().c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "input_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
