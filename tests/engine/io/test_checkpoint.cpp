// Checkpoint files in a model directory: save/load, keep_max rotation and the
// index, recovery when the index is lost, atomicity, and write failures that
// leave earlier checkpoints intact.
#include <doctest.h>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <filesystem>

#include "engine/io/checkpoint.hpp"
#include "engine/io/checkpoint_index.hpp"
#include "engine/io/file_util.hpp"
#include "io_test_util.hpp"

namespace dtrain {
namespace {

namespace fs = std::filesystem;

CheckpointData make_data(int64_t step, float fill = 1.0f) {
  CheckpointData d;
  d.global_step = step;
  d.metadata["input_position"] = std::to_string(step * 32);
  d.tensors.emplace_back("dense/kernel", Tensor(Shape{3, 2}, fill));
  d.tensors.emplace_back("dense/bias", Tensor(Shape{2}, -fill));
  return d;
}

std::string ckpt(const testing::TempDir& dir, int64_t step) {
  return dir / ("model.ckpt-" + std::to_string(step) + ".safetensors");
}

std::vector<std::string> files_in(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

TEST_CASE("checkpoint: save then load returns the same step, metadata and tensors") {
  testing::TempDir dir;
  const std::string model_dir = dir / "run/a";  // created on demand
  Result<std::string> path = save_checkpoint(model_dir, make_data(100, 2.5f), 5);
  REQUIRE(path.ok());
  CHECK(*path == model_dir + "/model.ckpt-100.safetensors");
  Result<CheckpointData> back = load_checkpoint(*path);
  REQUIRE(back.ok());
  CHECK(back->global_step == 100);
  CHECK(back->metadata == std::map<std::string, std::string>{{"global_step", "100"}, {"input_position", "3200"}});
  REQUIRE(back->find("dense/kernel") != nullptr);
  CHECK(back->find("dense/kernel")->to_vector() == std::vector<float>(6, 2.5f));
  CHECK(back->find("dense/bias")->to_vector() == std::vector<float>(2, -2.5f));
  CHECK(latest_checkpoint(model_dir) == *path);
}

TEST_CASE("checkpoint: keep_max rotates old files out and the index lists the rest") {
  testing::TempDir dir;
  // Saved at (injected) Unix times 1000.5 + step.
  for (int64_t step : {100, 200, 300, 400, 500}) {
    const KeepPolicy keep{3, std::nullopt, 1000.5 + static_cast<double>(step)};
    REQUIRE(save_checkpoint(dir.path(), make_data(step), keep).ok());
  }
  CHECK(files_in(dir.path()) == std::vector<std::string>{"checkpoint", "model.ckpt-300.safetensors",
                                                         "model.ckpt-400.safetensors", "model.ckpt-500.safetensors"});
  CHECK(testing::read_bytes(dir / "checkpoint") == R"({
  "latest": "model.ckpt-500.safetensors",
  "all": [
    "model.ckpt-300.safetensors",
    "model.ckpt-400.safetensors",
    "model.ckpt-500.safetensors"
  ],
  "steps": [
    300,
    400,
    500
  ],
  "times": [
    1300.5,
    1400.5,
    1500.5
  ],
  "preserved": [],
  "keep_hours_since": 1100.5
}
)");
  CHECK(list_checkpoints(dir.path()) == std::vector<std::string>{ckpt(dir, 300), ckpt(dir, 400), ckpt(dir, 500)});
  CHECK(latest_checkpoint(dir.path()) == ckpt(dir, 500));

  SUBCASE("keep_max <= 0 keeps everything") {
    REQUIRE(save_checkpoint(dir.path(), make_data(600), 0).ok());
    REQUIRE(save_checkpoint(dir.path(), make_data(700), -1).ok());
    CHECK(list_checkpoints(dir.path()).size() == 5);
  }
  SUBCASE("re-saving a step replaces it") {
    REQUIRE(save_checkpoint(dir.path(), make_data(400, 9.0f), 3).ok());
    CHECK(list_checkpoints(dir.path()) == std::vector<std::string>{ckpt(dir, 300), ckpt(dir, 400), ckpt(dir, 500)});
    Result<CheckpointData> back = load_checkpoint(ckpt(dir, 400));
    REQUIRE(back.ok());
    CHECK(back->find("dense/kernel")->to_vector() == std::vector<float>(6, 9.0f));
  }
  SUBCASE("the checkpoint just saved is kept even when its step is the oldest") {
    REQUIRE(save_checkpoint(dir.path(), make_data(50), 3).ok());
    CHECK(list_checkpoints(dir.path()) == std::vector<std::string>{ckpt(dir, 50), ckpt(dir, 400), ckpt(dir, 500)});
  }
}

TEST_CASE("checkpoint: a lost or corrupt index falls back to scanning the directory") {
  testing::TempDir dir;
  CHECK_FALSE(latest_checkpoint(dir.path()).has_value());
  CHECK_FALSE(latest_checkpoint(dir / "does-not-exist").has_value());
  for (int64_t step : {10, 20, 30}) REQUIRE(save_checkpoint(dir.path(), make_data(step), 0).ok());
  // Leftovers of an interrupted save and look-alike names are never checkpoints.
  testing::write_bytes(dir / "model.ckpt-90.safetensors.tmp-4242", "half-written");
  testing::write_bytes(dir / "model.ckpt-080.safetensors", "not canonical");
  testing::write_bytes(dir / "model.ckpt-70.safetensors.bak", "backup");
  fs::create_directory(dir / "model.ckpt-60.safetensors");

  const std::vector<std::string> all{ckpt(dir, 10), ckpt(dir, 20), ckpt(dir, 30)};
  CHECK(list_checkpoints(dir.path()) == all);
  for (const std::string& bad :
       {std::string("garbage{"), std::string("[]"), std::string(R"({"latest": "x", "all": ["../../etc/passwd"], "steps": [1]})"),
        std::string(R"({"latest": "model.ckpt-20.safetensors", "all": ["model.ckpt-20.safetensors"], "steps": [21]})"),
        std::string(R"({"latest": "model.ckpt-10.safetensors", "all": ["model.ckpt-10.safetensors", "model.ckpt-20.safetensors"], "steps": [10, 20]})"),
        std::string(R"({"latest": "model.ckpt-5.safetensors", "all": ["model.ckpt-5.safetensors"], "steps": [5]})")}) {
    CAPTURE(bad);
    testing::write_bytes(dir / "checkpoint", bad);
    CHECK(latest_checkpoint(dir.path()) == ckpt(dir, 30));
    CHECK(list_checkpoints(dir.path()) == all);
  }
  fs::remove(dir / "checkpoint");
  CHECK(latest_checkpoint(dir.path()) == ckpt(dir, 30));

  SUBCASE("the next save rebuilds the index from the scan and rotates") {
    REQUIRE(save_checkpoint(dir.path(), make_data(40), 2).ok());
    CHECK(list_checkpoints(dir.path()) == std::vector<std::string>{ckpt(dir, 30), ckpt(dir, 40)});
    CHECK_FALSE(fs::exists(ckpt(dir, 10)));
    CHECK(fs::exists(dir / "model.ckpt-90.safetensors.tmp-4242"));  // not ours to delete
    auto index = io::read_checkpoint_index(dir.path());
    REQUIRE(index.has_value());
    REQUIRE(index->size() == 2);
    CHECK((*index)[0].step == 30);
    CHECK((*index)[0].name == "model.ckpt-30.safetensors");
    CHECK((*index)[0].time == 0);  // recovered by the scan: the save time is unknown
    CHECK((*index)[1].step == 40);
    CHECK((*index)[1].name == "model.ckpt-40.safetensors");
    CHECK((*index)[1].time > 0);
  }
  SUBCASE("index entries whose files were deleted are skipped") {
    REQUIRE(save_checkpoint(dir.path(), make_data(40), 0).ok());
    fs::remove(ckpt(dir, 40));
    CHECK(latest_checkpoint(dir.path()) == ckpt(dir, 30));
  }
}

TEST_CASE("checkpoint file names") {
  CHECK(io::checkpoint_file_name(0) == "model.ckpt-0.safetensors");
  CHECK(io::parse_checkpoint_file_name("model.ckpt-0.safetensors") == 0);
  CHECK(io::parse_checkpoint_file_name("model.ckpt-9223372036854775807.safetensors") == INT64_MAX);
  for (const char* bad : {"model.ckpt-.safetensors", "model.ckpt-01.safetensors", "model.ckpt--1.safetensors",
                          "model.ckpt-+1.safetensors", "model.ckpt-1.safetensors.tmp-12", "model.ckpt-1x.safetensors",
                          "model.ckpt-99999999999999999999.safetensors", "checkpoint"}) {
    CAPTURE(bad);
    CHECK_FALSE(io::parse_checkpoint_file_name(bad).has_value());
  }
}

TEST_CASE("checkpoint: failed saves are kRuntime errors that leave earlier checkpoints intact") {
  testing::TempDir dir;
  REQUIRE(save_checkpoint(dir.path(), make_data(100), 2).ok());
  REQUIRE(save_checkpoint(dir.path(), make_data(200), 2).ok());
  const std::string index_before = testing::read_bytes(dir / "checkpoint");
  const std::string ckpt_before = testing::read_bytes(ckpt(dir, 100));
  const std::string tmp = io::temporary_name(ckpt(dir, 300));

  SUBCASE("cannot create the temporary file") {
    fs::create_directory(tmp);
    Result<std::string> r = save_checkpoint(dir.path(), make_data(300), 2);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().kind == ErrorKind::kRuntime);
    CHECK(r.error().message == tmp + ": cannot create: Is a directory");
    fs::remove(tmp);
  }
  SUBCASE("cannot rename over the final name") {
    fs::create_directories(ckpt(dir, 300) + "/occupied");
    Result<std::string> r = save_checkpoint(dir.path(), make_data(300), 2);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message == ckpt(dir, 300) + ": cannot rename " + tmp + " over it: Is a directory");
    CHECK_FALSE(fs::exists(tmp));
    fs::remove_all(ckpt(dir, 300));
  }
  SUBCASE("disk full while writing (file size limit)") {
    struct rlimit old {};
    REQUIRE(::getrlimit(RLIMIT_FSIZE, &old) == 0);
    auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
    struct rlimit small = old;
    small.rlim_cur = 4096;
    REQUIRE(::setrlimit(RLIMIT_FSIZE, &small) == 0);
    CheckpointData big = make_data(300);
    big.tensors.emplace_back("big", Tensor(Shape{4096}, 1.0f));
    Result<std::string> r = save_checkpoint(dir.path(), big, 2);
    ::setrlimit(RLIMIT_FSIZE, &old);
    std::signal(SIGXFSZ, old_handler);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().kind == ErrorKind::kRuntime);
    CHECK(r.error().message == tmp + ": cannot write: File too large");
    CHECK_FALSE(fs::exists(tmp));
  }
  SUBCASE("model_dir is a file") {
    testing::write_bytes(dir / "plain", "x");
    Result<std::string> r = save_checkpoint(dir / "plain", make_data(300), 2);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message == dir / "plain: cannot create directory: Not a directory");
  }
  SUBCASE("invalid data") {
    Result<std::string> neg = save_checkpoint(dir.path(), make_data(-1), 2);
    REQUIRE_FALSE(neg.ok());
    CHECK(neg.error().message == dir.path() + ": cannot save a checkpoint for negative step -1");
    CheckpointData dup = make_data(300);
    dup.tensors.push_back(dup.tensors.front());
    Result<std::string> r = save_checkpoint(dir.path(), dup, 2);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message == dir.path() + ": checkpoint: tensor name \"dense/kernel\" appears twice");
  }
  CHECK(testing::read_bytes(dir / "checkpoint") == index_before);
  CHECK(testing::read_bytes(ckpt(dir, 100)) == ckpt_before);
  CHECK(list_checkpoints(dir.path()) == std::vector<std::string>{ckpt(dir, 100), ckpt(dir, 200)});
}

TEST_CASE("describe_checkpoint prints step, metadata and one row per tensor") {
  CheckpointData d;
  d.global_step = 300;
  d.metadata = {{"global_step", "300"}, {"dtrain_version", "0.1.0"}};
  d.tensors.emplace_back("dense/kernel", Tensor::from({3, 2}, {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 2.5f}));
  d.tensors.emplace_back("b", Tensor::from({2}, {-1.0f, NAN}));
  d.tensors.emplace_back("empty", Tensor(Shape{0}));
  d.tensors.emplace_back("step_scale", Tensor::from({}, {1e-7f}));
  CHECK(describe_checkpoint(d) ==
        "global_step: 300\n"
        "metadata:\n"
        "  dtrain_version: 0.1.0\n"
        "  global_step: 300\n"
        "tensors: 4 (9 values, 36 bytes)\n"
        "  name          shape   dtype    min   mean    max\n"
        "  dense/kernel  [3, 2]  F32        0   1.25    2.5\n"
        "  b             [2]     F32      nan    nan    nan\n"
        "  empty         [0]     F32        -      -      -\n"
        "  step_scale    []      F32    1e-07  1e-07  1e-07\n");
}

}  // namespace dtrain

namespace dtrain {
namespace {

// A pid that no process has: a child that has exited and been reaped.
pid_t dead_pid() {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(0);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return pid;
}

TEST_CASE("stale temporaries: only this host's files of writers no longer running are removed") {
  testing::TempDir dir;
  const std::string ours = io::temporary_name(dir / "model.ckpt-10.safetensors");
  const std::string host_pid = ours.substr(ours.rfind(".tmp-") + 5);
  const std::string host = host_pid.substr(0, host_pid.rfind('-'));
  CHECK(host_pid == host + "-" + std::to_string(::getpid()));
  const std::string dead = std::to_string(dead_pid());
  const std::string stale_ckpt = "model.ckpt-20.safetensors.tmp-" + host + "-" + dead;
  const std::string stale_index = "checkpoint.tmp-" + host + "-" + dead;
  const std::string live_other = "model.ckpt-30.safetensors.tmp-" + host + "-" + std::to_string(::getppid());
  const std::string other_host = "model.ckpt-40.safetensors.tmp-" + host + "x-" + dead;
  const std::string legacy = "model.ckpt-50.safetensors.tmp-" + dead;
  for (const std::string& name : {stale_ckpt, stale_index, live_other, other_host, legacy, std::string("notes.tmp-x")}) {
    testing::write_bytes(dir / name, "half-written");
  }
  testing::write_bytes(ours, "being written");
  fs::create_directory(dir / ("sub.tmp-" + host + "-" + dead));  // a directory: left
  CHECK(io::remove_stale_temporaries(dir.path()) == std::vector<std::string>{stale_index, stale_ckpt});
  CHECK_FALSE(fs::exists(dir / stale_ckpt));
  CHECK_FALSE(fs::exists(dir / stale_index));
  for (const std::string& name : {live_other, other_host, legacy, std::string("notes.tmp-x")}) {
    CHECK(fs::exists(dir / name));
  }
  CHECK(fs::exists(ours));
  CHECK(fs::is_directory(dir / ("sub.tmp-" + host + "-" + dead)));
  CHECK(io::remove_stale_temporaries(dir / "missing").empty());
}

}  // namespace
}  // namespace dtrain
