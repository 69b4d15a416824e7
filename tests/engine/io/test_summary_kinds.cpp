// Histograms (against a binary search over TensorFlow's limits), text and
// HParams plugin summaries, read back from the event file.
#include <doctest.h>

#include <cfloat>
#include <cmath>
#include <limits>
#include <random>

#include "engine/io/histogram.hpp"
#include "engine/io/hparams_summary.hpp"
#include "engine/io/summary_writer.hpp"
#include "event.pb.h"
#include "event_test_util.hpp"
#include "hparams_plugin.pb.h"
#include "io_test_util.hpp"

namespace dtrain {
namespace {

using testing::read_events;

// The reference: TF's Histogram::Add (upper_bound over every limit), then
// EncodeToProto's collapse of empty runs, written plainly.
Histogram reference_histogram(const std::vector<float>& values) {
  const std::vector<double>& limits = default_histogram_limits();
  std::vector<double> counts(limits.size(), 0.0);
  Histogram h;
  h.min = DBL_MAX;
  h.max = -DBL_MAX;
  for (const float f : values) {
    if (!std::isfinite(f)) continue;
    const double v = f;
    counts[static_cast<size_t>(std::upper_bound(limits.begin(), limits.end(), v) - limits.begin())] += 1;
    h.min = std::min(h.min, v);
    h.max = std::max(h.max, v);
    h.num += 1;
    h.sum += v;
    h.sum_squares += v * v;
  }
  for (size_t i = 0; i < counts.size(); ++i) {
    if (counts[i] > 0 || h.bucket.empty() || h.bucket.back() > 0) {
      h.bucket_limit.push_back(limits[i]);
      h.bucket.push_back(counts[i]);
    } else {
      h.bucket_limit.back() = limits[i];  // one more empty bucket in the run
    }
  }
  return h;
}

double total(const std::vector<double>& v) {
  double t = 0;
  for (const double x : v) t += x;
  return t;
}

const tensorflow::Summary::Value& only_value(const tensorflow::Event& ev) {
  REQUIRE(ev.has_summary());
  REQUIRE(ev.summary().value_size() == 1);
  return ev.summary().value(0);
}

}  // namespace

TEST_CASE("histogram: TensorFlow's default limits") {
  const std::vector<double>& limits = default_histogram_limits();
  CHECK(limits.size() == 1551);  // 0, and each side 774 powers of 1.1 from 1e-12 below 1e20 and DBL_MAX
  CHECK(limits.front() == -DBL_MAX);
  CHECK(limits.back() == DBL_MAX);
  CHECK(limits[775] == 0.0);
  CHECK(limits[776] == 1e-12);
  CHECK(limits[774] == -1e-12);
  CHECK(limits[777] == doctest::Approx(1.1e-12));
  CHECK(limits[limits.size() - 2] < 1e20);
  CHECK(limits[limits.size() - 2] * 1.1 >= 1e20);
  for (size_t i = 1; i < limits.size(); ++i) REQUIRE(limits[i - 1] < limits[i]);
}

TEST_CASE("histogram: buckets equal a binary search over every limit, for values of every magnitude") {
  std::mt19937 rng(7);
  std::vector<float> values;
  std::uniform_real_distribution<float> exponent(-50, 30);
  std::uniform_real_distribution<float> unit(-1, 1);
  for (int i = 0; i < 200000; ++i) {
    const float v = std::pow(10.0f, exponent(rng)) * (unit(rng) < 0 ? -1.0f : 1.0f);
    values.push_back(v);
  }
  // Edges: the limits themselves as floats, zeros, denormals, the extremes.
  for (const double l : default_histogram_limits()) {
    if (std::abs(l) < FLT_MAX) {
      values.push_back(static_cast<float>(l));
      values.push_back(std::nextafter(static_cast<float>(l), 0.0f));
      values.push_back(std::nextafter(static_cast<float>(l), l < 0 ? -FLT_MAX : FLT_MAX));
    }
  }
  for (const float v : {0.0f, -0.0f, FLT_MIN, -FLT_MIN, std::numeric_limits<float>::denorm_min(), FLT_MAX, -FLT_MAX})
    values.push_back(v);
  const Histogram h = make_histogram(values);
  const Histogram want = reference_histogram(values);
  CHECK(h.num == static_cast<double>(values.size()));
  CHECK(h.min == -FLT_MAX);
  CHECK(h.max == FLT_MAX);
  CHECK(h.bucket_limit == want.bucket_limit);
  CHECK(h.bucket == want.bucket);
  CHECK(total(h.bucket) == h.num);
}

TEST_CASE("histogram: counts, sums and the collapse of empty buckets") {
  const Histogram h = make_histogram(std::vector<float>{0.5f, -2.0f, 0.5f, 0.0f, NAN, INFINITY});
  CHECK(h.num == 4);  // NaN and infinity left out
  CHECK(h.min == -2.0);
  CHECK(h.max == 0.5);
  CHECK(h.sum == -1.0);
  CHECK(h.sum_squares == 4.5);
  CHECK(total(h.bucket) == 4);
  // Non-empty buckets: -2's, 0's, 0.5's; empty runs between and around them.
  REQUIRE(h.bucket.size() == 7);
  CHECK(h.bucket == std::vector<double>{0, 1, 0, 1, 0, 2, 0});
  CHECK(h.bucket_limit[1] > -2.0);  // -2 lies below its bucket's limit ...
  CHECK(h.bucket_limit[0] <= -2.0);  // ... and at or above the one before
  CHECK(h.bucket_limit[3] == 1e-12);  // 0 counts in [0, 1e-12)
  CHECK(h.bucket_limit[2] == 0.0);
  CHECK(h.bucket_limit[4] <= 0.5);
  CHECK(h.bucket_limit[5] > 0.5);
  CHECK(h.bucket_limit[6] == DBL_MAX);

  const Histogram none = make_histogram(std::vector<float>{NAN});
  CHECK(none.num == 0);
  CHECK(none.min == 0);
  CHECK(none.max == 0);
  CHECK(none.bucket == std::vector<double>{0});
  CHECK(none.bucket_limit == std::vector<double>{DBL_MAX});
}

TEST_CASE("SummaryWriter: a histogram event holds TensorFlow's HistogramProto") {
  testing::TempDir dir;
  auto w = SummaryWriter::open(dir.path());
  REQUIRE(w.ok());
  const std::vector<float> values = {0.25f, -0.125f, 3.0f, 3.0f, 0.0f};
  REQUIRE((*w)->histogram("weights/dense/kernel", 12, values).ok());
  REQUIRE((*w)->close().ok());
  std::vector<tensorflow::Event> ev = read_events((*w)->path());
  REQUIRE(ev.size() == 2);
  CHECK(ev[1].step() == 12);
  const tensorflow::Summary::Value& v = only_value(ev[1]);
  CHECK(v.tag() == "weights/dense/kernel");
  REQUIRE(v.has_histo());
  const Histogram want = make_histogram(values);
  CHECK(v.histo().num() == 5);
  CHECK(v.histo().min() == -0.125);
  CHECK(v.histo().max() == 3.0);
  CHECK(v.histo().sum() == 6.125);
  CHECK(v.histo().sum_squares() == doctest::Approx(18.078125));
  CHECK(std::vector<double>(v.histo().bucket().begin(), v.histo().bucket().end()) == want.bucket);
  CHECK(std::vector<double>(v.histo().bucket_limit().begin(), v.histo().bucket_limit().end()) == want.bucket_limit);
  double sum = 0;
  for (const double c : v.histo().bucket()) sum += c;
  CHECK(sum == 5);
}

TEST_CASE("SummaryWriter: a text event is the text plugin's string tensor") {
  testing::TempDir dir;
  auto w = SummaryWriter::open(dir.path());
  REQUIRE(w.ok());
  REQUIRE((*w)->text("job", 0, "```yaml\nrun: {}\n```\n").ok());
  REQUIRE((*w)->close().ok());
  std::vector<tensorflow::Event> ev = read_events((*w)->path());
  REQUIRE(ev.size() == 2);
  const tensorflow::Summary::Value& v = only_value(ev[1]);
  CHECK(v.tag() == "job");
  CHECK(v.metadata().plugin_data().plugin_name() == "text");
  CHECK(v.metadata().plugin_data().content().empty());
  REQUIRE(v.has_tensor());
  CHECK(v.tensor().dtype() == tensorflow::DT_STRING);
  CHECK(v.tensor().tensor_shape().dim_size() == 0);
  REQUIRE(v.tensor().string_val_size() == 1);
  CHECK(v.tensor().string_val(0) == "```yaml\nrun: {}\n```\n");
}

TEST_CASE("SummaryWriter: a raw summary that does not parse is an error") {
  testing::TempDir dir;
  auto w = SummaryWriter::open(dir.path());
  REQUIRE(w.ok());
  Status s = (*w)->raw_summary(1, "\xff\xff\xff");
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().message == (*w)->path() + ": a summary to write does not parse as tensorflow.Summary");
}

TEST_CASE("hparams summaries: experiment, session start and end as the HParams plugin reads them") {
  namespace hp = tensorboard::hparams;
  testing::TempDir dir;
  auto w = SummaryWriter::open(dir.path());
  REQUIRE(w.ok());
  const std::vector<HParam> hparams = {
      {"optimizer.type", std::string("adam"), "The optimizer."},
      {"optimizer.learning_rate", 0.001, ""},
      {"run.deterministic", true, ""},
  };
  const std::vector<HParamMetric> metrics = {{"", "loss", false, "Training loss."}, {"eval", "accuracy", true, ""}};
  REQUIRE(write_hparams_experiment(**w, 0, hparams, metrics, 1000.5).ok());
  REQUIRE(write_hparams_session_start(**w, 0, hparams, "/runs/a", 1001.0).ok());
  REQUIRE(write_hparams_session_end(**w, 40, SessionStatus::kSuccess, 1002.0).ok());
  REQUIRE((*w)->close().ok());
  std::vector<tensorflow::Event> ev = read_events((*w)->path());
  REQUIRE(ev.size() == 4);

  const char* tags[] = {"_hparams_/experiment", "_hparams_/session_start_info", "_hparams_/session_end_info"};
  hp::HParamsPluginData data[3];
  for (int i = 0; i < 3; ++i) {
    const tensorflow::Summary::Value& v = only_value(ev[static_cast<size_t>(i) + 1]);
    CHECK(v.tag() == tags[i]);
    CHECK(v.metadata().plugin_data().plugin_name() == "hparams");
    REQUIRE(data[i].ParseFromString(v.metadata().plugin_data().content()));
    CHECK(data[i].version() == 0);
    // metadata.NULL_TENSOR: an empty float tensor of shape [0].
    CHECK(v.tensor().dtype() == tensorflow::DT_FLOAT);
    REQUIRE(v.tensor().tensor_shape().dim_size() == 1);
    CHECK(v.tensor().tensor_shape().dim(0).size() == 0);
  }
  CHECK(ev[3].step() == 40);

  REQUIRE(data[0].has_experiment());
  const hp::Experiment& e = data[0].experiment();
  CHECK(e.time_created_secs() == 1000.5);
  REQUIRE(e.hparam_infos_size() == 3);
  CHECK(e.hparam_infos(0).name() == "optimizer.type");
  CHECK(e.hparam_infos(0).type() == hp::DATA_TYPE_STRING);
  CHECK(e.hparam_infos(0).description() == "The optimizer.");
  CHECK(e.hparam_infos(1).type() == hp::DATA_TYPE_FLOAT64);
  CHECK(e.hparam_infos(2).type() == hp::DATA_TYPE_BOOL);
  CHECK(e.hparam_infos(0).domain_case() == hp::HParamInfo::DOMAIN_NOT_SET);
  REQUIRE(e.metric_infos_size() == 2);
  CHECK(e.metric_infos(0).name().group().empty());
  CHECK(e.metric_infos(0).name().tag() == "loss");
  CHECK(e.metric_infos(0).dataset_type() == hp::DATASET_TRAINING);
  CHECK(e.metric_infos(0).description() == "Training loss.");
  CHECK(e.metric_infos(1).name().group() == "eval");
  CHECK(e.metric_infos(1).name().tag() == "accuracy");
  CHECK(e.metric_infos(1).dataset_type() == hp::DATASET_VALIDATION);

  REQUIRE(data[1].has_session_start_info());
  const hp::SessionStartInfo& s = data[1].session_start_info();
  CHECK(s.model_uri() == "/runs/a");
  CHECK(s.start_time_secs() == 1001.0);
  REQUIRE(s.hparams().size() == 3);
  CHECK(s.hparams().at("optimizer.type").string_value() == "adam");
  CHECK(s.hparams().at("optimizer.learning_rate").number_value() == 0.001);
  CHECK(s.hparams().at("run.deterministic").bool_value() == true);

  REQUIRE(data[2].has_session_end_info());
  CHECK(data[2].session_end_info().status() == hp::STATUS_SUCCESS);
  CHECK(data[2].session_end_info().end_time_secs() == 1002.0);
}

}  // namespace dtrain
