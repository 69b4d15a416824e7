// The memory room: MemAvailable and cgroup memory-limit parsing, the cgroup
// directories of a v1 and a v2 layout, and the least room over real files in
// a temporary directory.
#include <doctest.h>

#include <filesystem>

#include "engine/host_memory.hpp"
#include "engine/threads.hpp"
#include "tests/engine/io/io_test_util.hpp"

using namespace dtrain;
using dtrain::testing::TempDir;
using dtrain::testing::write_bytes;

namespace {

void put(const std::string& dir, const std::string& rel, const std::string& text) {
  const std::filesystem::path p = std::filesystem::path(dir) / rel;
  std::filesystem::create_directories(p.parent_path());
  write_bytes(p.string(), text);
}

std::string mount_line(int id, const std::string& root, const std::string& point, const std::string& fstype,
                       const std::string& super = "rw") {
  return std::to_string(id) + " 23 0:" + std::to_string(id) + " " + root + " " + point +
         " rw,nosuid,nodev,noexec,relatime shared:9 - " + fstype + " " + fstype + " " + super + "\n";
}

const char* kMeminfo =
    "MemTotal:       24684084 kB\n"
    "MemFree:        22561234 kB\n"
    "MemAvailable:   23768112 kB\n"
    "Buffers:           12345 kB\n";

}  // namespace

TEST_CASE("host memory: MemAvailable and limit texts") {
  CHECK(parse_mem_available(kMeminfo) == int64_t{23768112} * 1024);
  CHECK_FALSE(parse_mem_available("MemTotal: 100 kB\n"));
  CHECK_FALSE(parse_mem_available("MemAvailable: lots\n"));
  CHECK(parse_memory_limit("536870912\n") == int64_t{536870912});
  CHECK_FALSE(parse_memory_limit("max\n"));
  CHECK_FALSE(parse_memory_limit("9223372036854771712\n"));  // cgroup v1: no limit
  CHECK_FALSE(parse_memory_limit("-1"));
  CHECK_FALSE(parse_memory_limit(""));
}

TEST_CASE("host memory: the cgroup directories of v2 and of v1's memory hierarchy, leaf first") {
  const std::string mounts = mount_line(30, "/", "/sys/fs/cgroup", "cgroup2") +
                             mount_line(31, "/", "/v1/memory", "cgroup", "rw,memory") +
                             mount_line(32, "/", "/v1/cpu", "cgroup", "rw,cpu,cpuacct");
  CHECK(cgroup_dirs("0::/job/step\n", mounts, "memory") ==
        std::vector<std::string>{"/sys/fs/cgroup/job/step", "/sys/fs/cgroup/job", "/sys/fs/cgroup"});
  CHECK(cgroup_dirs("4:memory:/slurm/uid_0\n3:cpu,cpuacct:/x\n", mounts, "memory") ==
        std::vector<std::string>{"/v1/memory/slurm/uid_0", "/v1/memory/slurm", "/v1/memory"});
  CHECK(cgroup_dirs("3:cpu,cpuacct:/x\n", mounts, "memory").empty());
  CHECK(cgroup_dirs("0::/job\n", "", "memory").empty());
}

TEST_CASE("host memory: the least room of MemAvailable and every level's limit less its usage") {
  TempDir tmp;
  const std::string leaf = tmp / "job/step", parent = tmp / "job";
  put(leaf, "memory.max", "max\n");
  put(leaf, "memory.current", "1000\n");
  put(parent, "memory.max", "1073741824\n");  // 1 GiB, 256 MiB used
  put(parent, "memory.current", "268435456\n");
  auto room = memory_room(kMeminfo, {leaf, parent, tmp.path()});
  REQUIRE(room);
  CHECK(room->bytes == int64_t{768} << 20);
  CHECK(room->source == parent + "/memory.max");

  // Without a limit, MemAvailable; over its limit, no room at all.
  room = memory_room(kMeminfo, {leaf});
  REQUIRE(room);
  CHECK(room->bytes == int64_t{23768112} * 1024);
  CHECK(room->source == "MemAvailable");
  const std::string v1 = tmp / "v1";
  put(v1, "memory.limit_in_bytes", "1000\n");
  put(v1, "memory.usage_in_bytes", "2000\n");
  room = memory_room("", {v1});
  REQUIRE(room);
  CHECK(room->bytes == 0);
  CHECK(room->source == v1 + "/memory.limit_in_bytes");
  CHECK_FALSE(memory_room("", {leaf}));
  CHECK(detect_memory_room());  // this machine has /proc/meminfo
}
