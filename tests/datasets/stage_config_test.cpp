// The stage options in the job file (shard, interleave, map,
// num_parallel_calls): read into DataSourceSpec, defaults that keep the old
// behaviour, the resolved YAML loading back the same, and their errors.
#include <doctest.h>

#include "../config_schema/job_test_util.hpp"
#include "datasets/source.hpp"

namespace dtrain {
namespace {

using testing::kMinimalJob;
using testing::load_error;
using testing::load_text;

const char* kStages =
    "data:\n"
    "  train:\n"
    "    format: synthetic\n"
    "    synthetic: {num_examples: 40, shape: [4, 4, 3], num_classes: 5}\n"
    "    shard: data\n"
    "    interleave: {cycle_length: 4}\n"
    "    num_parallel_calls: auto\n"
    "    map:\n"
    "      - {random_crop: {padding: 4}}\n"
    "      - {random_flip: horizontal}\n"
    "      - {random_brightness: {max_delta: 0.2}}\n"
    "      - {random_contrast: {lower: 0.8, upper: 1.2}}\n"
    "      - {normalize: {mean: [0.5, 0.4, 0.3], std: [0.2, 0.2, 0.25]}}\n"
    "      - {cast: int8}\n"
    "      - {one_hot: {depth: 5}}\n"
    "  eval: {format: synthetic, num_parallel_calls: 3}\n";

JobSpec load(const std::string& yaml) {
  auto r = load_text(yaml);
  REQUIRE_MESSAGE(r.ok(), r.error().message);
  return r.value();
}

TEST_CASE("stages config: defaults keep the plain pipeline") {
  const JobSpec job = load(std::string(kMinimalJob) + "data:\n  train: {format: synthetic}\n");
  const DataSourceSpec& d = *job.data.train;
  CHECK(d.shard == "auto");
  CHECK_FALSE(d.interleave.has_value());
  CHECK(d.map.empty());
  CHECK(d.num_parallel_calls == 1);
  CHECK(job.resolved_yaml.find("    shard: auto\n    interleave: null\n    map: []\n    num_parallel_calls: 1\n") !=
        std::string::npos);
}

TEST_CASE("stages config: every option read, and the resolved YAML loads back the same") {
  const JobSpec job = load(std::string(kMinimalJob) + kStages);
  const DataSourceSpec& d = *job.data.train;
  CHECK(d.shard == "data");
  REQUIRE(d.interleave.has_value());
  CHECK(d.interleave->cycle_length == 4);
  CHECK(d.interleave->block_length == 1);
  CHECK(d.num_parallel_calls == 0);
  CHECK(job.data.eval->num_parallel_calls == 3);
  REQUIRE(d.map.size() == 7);
  CHECK(d.map[0].op == "random_crop");
  CHECK(d.map[0].padding == 4);
  CHECK(d.map[0].where == "job.yaml:13:9");
  CHECK(d.map[1].mode == "horizontal");
  CHECK(d.map[2].max_delta == 0.2);
  CHECK(d.map[3].lower == 0.8);
  CHECK(d.map[3].upper == 1.2);
  CHECK(d.map[4].mean == std::vector<double>{0.5, 0.4, 0.3});
  CHECK(d.map[4].std == std::vector<double>{0.2, 0.2, 0.25});
  CHECK(d.map[5].dtype == "int8");
  CHECK(d.map[6].depth == 5);
  const JobSpec again = load(job.resolved_yaml);
  CHECK(again.resolved_yaml == job.resolved_yaml);
  // The whole spec builds a pipeline whose labels are one-hot.
  auto in = make_input(d, InputOptions{"", 8, 1, "data.train"});
  REQUIRE_MESSAGE(in.ok(), in.error().message);
  CHECK((*in)->label_shape() == Shape{5});
  auto b = (*in)->next();
  REQUIRE(b.ok());
  CHECK((*b)->labels.shape() == Shape{8, 5});
}

TEST_CASE("stages config: schema errors point at the option") {
  const std::string job = std::string(kMinimalJob) + "data:\n  train:\n    format: synthetic\n";
  CHECK(load_error(job + "    shard: files\n") ==
        "job.yaml:8:12: data.train.shard: \"files\" is not one of auto, file, data, off (did you mean \"file\"?)");
  CHECK(load_error(job + "    map: [{random_flips: horizontal}]\n") ==
        "job.yaml:8:12: data.train.map[0].random_flips: unknown key; expected one of normalize, cast, one_hot, "
        "random_crop, random_flip, random_brightness, random_contrast, random_resized_crop, resize_center_crop (did you mean "
        "\"random_flip\"?)");
  CHECK(load_error(job + "    num_parallel_calls: 0\n") ==
        "job.yaml:8:25: data.train.num_parallel_calls: 0 is below the minimum 1");
  CHECK(load_error(job + "    interleave: {block_length: 2}\n") ==
        "job.yaml:8:17: data.train.interleave.cycle_length: required key is missing; expected an integer >= 1");
}

TEST_CASE("stages config: a map entry with two operations is a config error of the pipeline") {
  const JobSpec job = load(std::string(kMinimalJob) +
                           "data:\n  train:\n    format: synthetic\n    map: [{cast: uint8, random_flip: horizontal}]\n");
  auto in = make_input(*job.data.train, InputOptions{"", 8, 1, "data.train"});
  REQUIRE_FALSE(in.ok());
  CHECK(in.error().kind == ErrorKind::kConfig);
  CHECK(in.error().message ==
        "job.yaml:8:11: data.train.map[0]: each map entry names one operation, got 2 (cast, random_flip)");
}

}  // namespace
}  // namespace dtrain
