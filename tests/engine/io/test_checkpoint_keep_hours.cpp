// keep_checkpoint_every_n_hours (KeepPolicy::every_n_hours) with an injected
// clock: which checkpoints are preserved beyond keep_max, that the index
// records them and the hours' origin, and that both survive a restart.
#include <doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "engine/io/checkpoint.hpp"
#include "engine/io/checkpoint_index.hpp"
#include "io_test_util.hpp"

namespace dtrain {
namespace {

namespace fs = std::filesystem;

constexpr double kT0 = 1.7e9;  // an arbitrary Unix time for the first save

CheckpointData data_at(int64_t step) {
  CheckpointData d;
  d.global_step = step;
  d.tensors.emplace_back("w", Tensor(Shape{2}, static_cast<float>(step)));
  return d;
}

// Saves step at kT0 + minutes * 60 under {max 2, every hour}.
void save_at(const std::string& dir, int64_t step, double minutes, std::optional<double> hours = 1.0) {
  const KeepPolicy keep{2, hours, kT0 + minutes * 60.0};
  REQUIRE(save_checkpoint(dir, data_at(step), keep).ok());
}

std::vector<int64_t> steps_on_disk(const std::string& dir) {
  std::vector<int64_t> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (auto s = io::parse_checkpoint_file_name(e.path().filename().string())) out.push_back(*s);
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<int64_t> preserved_in_index(const std::string& dir) {
  std::vector<int64_t> out;
  auto index = io::read_checkpoint_index(dir);
  REQUIRE(index.has_value());
  for (const auto& e : *index)
    if (e.preserved) out.push_back(e.step);
  return out;
}

}  // namespace

TEST_CASE("keep_checkpoint_every_n_hours: one checkpoint per hour is preserved beyond keep_max") {
  testing::TempDir dir;
  // Saves every 20 minutes, keep_max 2: a checkpoint leaving the newest two is
  // preserved when saved >= 1 h after the first save (minute 0), then >= 1 h
  // after the last preserved one: steps 40 (minute 60) and 70 (minute 120).
  for (int64_t k = 0; k < 10; ++k) save_at(dir.path(), 10 * (k + 1), 20.0 * k);
  CHECK(steps_on_disk(dir.path()) == std::vector<int64_t>{40, 70, 90, 100});
  CHECK(preserved_in_index(dir.path()) == std::vector<int64_t>{40, 70});
  CHECK(list_checkpoints(dir.path()).size() == 4);
  CHECK(latest_checkpoint(dir.path()) == dir / "model.ckpt-100.safetensors");
  CHECK(io::read_keep_hours_since(dir.path()) == std::optional<double>(kT0 + 120 * 60.0));
  auto index = io::read_checkpoint_index(dir.path());
  REQUIRE(index.has_value());
  CHECK(index->back().time == doctest::Approx(kT0 + 180 * 60.0));
}

TEST_CASE("keep_checkpoint_every_n_hours: the preserved set and the hours' origin survive a restart") {
  testing::TempDir dir;
  for (int64_t k = 0; k < 10; ++k) save_at(dir.path(), 10 * (k + 1), 20.0 * k);
  // A new process (nothing in memory): step 90 (minute 160) leaves the newest
  // two but is only 40 minutes after the last preserved one (minute 120), so
  // it goes; were the origin forgotten (counted from the oldest kept save,
  // minute 60) it would be kept.
  save_at(dir.path(), 110, 200);
  CHECK(steps_on_disk(dir.path()) == std::vector<int64_t>{40, 70, 100, 110});
  save_at(dir.path(), 120, 240);  // step 100 (minute 180): one hour after 120
  CHECK(steps_on_disk(dir.path()) == std::vector<int64_t>{40, 70, 100, 110, 120});
  CHECK(preserved_in_index(dir.path()) == std::vector<int64_t>{40, 70, 100});
  // A later run without the option never deletes preserved checkpoints.
  for (int64_t step : {130, 140, 150}) save_at(dir.path(), step, 250, std::nullopt);
  CHECK(steps_on_disk(dir.path()) == std::vector<int64_t>{40, 70, 100, 140, 150});
}

TEST_CASE("keep_checkpoint_every_n_hours: an index written without save times still works") {
  testing::TempDir dir;
  save_at(dir.path(), 10, 0);
  save_at(dir.path(), 20, 20);
  // The index of an older dtrain: no times, preserved or keep_hours_since.
  {
    std::ofstream(dir / "checkpoint") << R"({"latest": "model.ckpt-20.safetensors", )"
                                      << R"("all": ["model.ckpt-10.safetensors", "model.ckpt-20.safetensors"], )"
                                      << R"("steps": [10, 20]})";
  }
  auto index = io::read_checkpoint_index(dir.path());
  REQUIRE(index.has_value());
  CHECK(index->front().time == 0);
  // Unknown save times are never preserved; the origin becomes this save.
  save_at(dir.path(), 30, 600);
  CHECK(steps_on_disk(dir.path()) == std::vector<int64_t>{20, 30});
  CHECK(preserved_in_index(dir.path()).empty());
  CHECK(io::read_keep_hours_since(dir.path()) == std::optional<double>(kT0 + 600 * 60.0));
}

}  // namespace dtrain
