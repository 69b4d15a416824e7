// The thread budget: cpu.max and cfs quota parsing, the cgroup walk over real
// files of v1, v2 and hybrid layouts in a temporary directory, the budget from
// affinity and quota, who chooses the thread count, and launch's division.
#include <doctest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "engine/threads.hpp"
#include "tests/engine/io/io_test_util.hpp"

using namespace dtrain;
using dtrain::testing::TempDir;
using dtrain::testing::write_bytes;

namespace {

// Creates dir/rel (directories included) holding `text`.
void put(const std::string& dir, const std::string& rel, const std::string& text) {
  const std::filesystem::path p = std::filesystem::path(dir) / rel;
  std::filesystem::create_directories(p.parent_path());
  write_bytes(p.string(), text);
}

// A /proc/self/mountinfo line for a cgroup (v1, with `controllers`) or cgroup2 mount.
std::string mount_line(int id, const std::string& root, const std::string& point, const std::string& fstype,
                       const std::string& super = "rw") {
  return std::to_string(id) + " 23 0:" + std::to_string(id) + " " + root + " " + point +
         " rw,nosuid,nodev,noexec,relatime shared:9 - " + fstype + " " + fstype + " " + super + "\n";
}

}  // namespace

TEST_CASE("threads: cpu.max and cfs quota texts") {
  auto q = parse_cpu_max("150000 100000\n");
  REQUIRE(q);
  CHECK(q->quota_us == 150000);
  CHECK(q->period_us == 100000);
  CHECK(q->cpus() == doctest::Approx(1.5));
  CHECK(q->whole_cpus() == 2);
  CHECK(parse_cpu_max("200000 100000")->whole_cpus() == 2);
  CHECK(parse_cpu_max("50000 100000")->whole_cpus() == 1);  // half a CPU still gets a thread
  CHECK(parse_cpu_max("200001 100000")->whole_cpus() == 3);
  CHECK_FALSE(parse_cpu_max("max 100000\n"));
  CHECK_FALSE(parse_cpu_max(""));
  CHECK_FALSE(parse_cpu_max("150000"));
  CHECK_FALSE(parse_cpu_max("abc 100000"));
  CHECK_FALSE(parse_cpu_max("0 100000"));

  CHECK_FALSE(parse_cfs_quota("-1\n", "100000\n"));
  auto v1 = parse_cfs_quota("250000\n", "100000\n");
  REQUIRE(v1);
  CHECK(v1->whole_cpus() == 3);
  CHECK_FALSE(parse_cfs_quota("x", "100000"));
  CHECK_FALSE(parse_cfs_quota("100000", "0"));
}

TEST_CASE("threads: cgroup v2 quota, the smallest on the way up") {
  TempDir tmp;
  const std::string root = tmp / "cgroup";
  const std::string mounts = mount_line(30, "/", root, "cgroup2");
  put(root, "cgroup.controllers", "cpu io memory\n");  // the root has no cpu.max
  put(root, "job/cpu.max", "300000 100000\n");
  put(root, "job/step/cpu.max", "max 100000\n");
  put(root, "job/step/task/cpu.max", "150000 100000\n");
  put(root, "other/cpu.max", "50000 100000\n");  // not on the way up

  auto q = cgroup_cpu_quota("0::/job/step/task\n", mounts);
  REQUIRE(q);
  CHECK(q->cpus() == doctest::Approx(1.5));
  CHECK(q->whole_cpus() == 2);
  CHECK(q->file == root + "/job/step/task/cpu.max");

  // A parent's smaller limit wins over the child's "max".
  q = cgroup_cpu_quota("0::/job/step\n", mounts);
  REQUIRE(q);
  CHECK(q->whole_cpus() == 3);
  CHECK(q->file == root + "/job/cpu.max");

  CHECK_FALSE(cgroup_cpu_quota("0::/\n", mounts));             // the root: no limit
  CHECK_FALSE(cgroup_cpu_quota("0::/not/there\n", mounts));    // missing files: no limit
  CHECK_FALSE(cgroup_cpu_quota("0::/job/step/task\n", ""));    // no cgroup mount
  CHECK_FALSE(cgroup_cpu_quota("", mounts));
}

TEST_CASE("threads: a container's own cgroup mounted as the root") {
  TempDir tmp;
  const std::string root = tmp / "sys fs";  // mountinfo writes the space as \040
  put(root, "cpu.max", "200000 100000\n");
  // The mount shows cgroup /docker/abc, which /proc/self/cgroup names in full.
  const std::string mounts =
      mount_line(31, "/docker/abc", tmp.path() + "/sys\\040fs", "cgroup2");
  auto q = cgroup_cpu_quota("0::/docker/abc\n", mounts);
  REQUIRE(q);
  CHECK(q->whole_cpus() == 2);
  CHECK(q->file == root + "/cpu.max");
  // A cgroup namespace shows "/" for the same directory.
  CHECK(cgroup_cpu_quota("0::/\n", mount_line(31, "/", tmp.path() + "/sys\\040fs", "cgroup2"))->whole_cpus() == 2);
}

TEST_CASE("threads: cgroup v1 cpu controller and hybrid layouts") {
  TempDir tmp;
  const std::string cpu = tmp / "cpu,cpuacct", mem = tmp / "memory", unified = tmp / "unified";
  const std::string mounts = mount_line(32, "/", cpu, "cgroup", "rw,cpu,cpuacct") +
                             mount_line(33, "/", mem, "cgroup", "rw,memory") +
                             mount_line(34, "/", unified, "cgroup2", "rw,nsdelegate");
  put(cpu, "cpu.cfs_quota_us", "-1\n");
  put(cpu, "cpu.cfs_period_us", "100000\n");
  put(cpu, "slurm/job_7/cpu.cfs_quota_us", "400000\n");
  put(cpu, "slurm/job_7/cpu.cfs_period_us", "100000\n");
  put(cpu, "slurm/job_7/step_0/cpu.cfs_quota_us", "-1\n");
  put(cpu, "slurm/job_7/step_0/cpu.cfs_period_us", "100000\n");
  // A memory hierarchy's files are not CPU limits, whatever they hold.
  put(mem, "slurm/job_7/step_0/cpu.cfs_quota_us", "100000\n");
  put(mem, "slurm/job_7/step_0/cpu.cfs_period_us", "100000\n");
  const std::string v1 = "5:memory:/slurm/job_7/step_0\n4:cpu,cpuacct:/slurm/job_7/step_0\n0::/\n";

  auto q = cgroup_cpu_quota(v1, mounts);
  REQUIRE(q);
  CHECK(q->whole_cpus() == 4);
  CHECK(q->file == cpu + "/slurm/job_7/cpu.cfs_quota_us");

  // Hybrid: a cpu.max in the unified hierarchy that is smaller wins.
  put(unified, "svc/cpu.max", "250000 100000\n");
  q = cgroup_cpu_quota("5:memory:/slurm/job_7/step_0\n4:cpu,cpuacct:/slurm/job_7/step_0\n0::/svc\n", mounts);
  REQUIRE(q);
  CHECK(q->cpus() == doctest::Approx(2.5));
  CHECK(q->whole_cpus() == 3);

  // Only a period file: no limit.
  put(cpu, "lone/cpu.cfs_period_us", "100000\n");
  CHECK_FALSE(cgroup_cpu_quota("4:cpu,cpuacct:/lone\n", mounts));
}

TEST_CASE("threads: the budget is the affinity mask capped by the quota") {
  auto b = make_budget({0, 1}, 16, CpuQuota{200000, 100000, "cpu.max"});
  CHECK(b.cpus == 2);
  CHECK(b.describe() == "budget 2: affinity 2 of 16 CPUs, cgroup quota 2.0");
  b = make_budget({0, 1, 2, 3, 4, 5, 6, 7}, 8, CpuQuota{150000, 100000, "cpu.max"});
  CHECK(b.cpus == 2);
  CHECK(b.describe() == "budget 2: affinity 8 of 8 CPUs, cgroup quota 1.5");
  b = make_budget({3}, 4, std::nullopt);
  CHECK(b.cpus == 1);
  CHECK(b.describe() == "budget 1: affinity 1 of 4 CPUs, no cgroup quota");
  b = make_budget({0, 1, 2, 3}, 4, CpuQuota{25000, 100000, "cpu.max"});
  CHECK(b.cpus == 1);
  CHECK(b.describe() == "budget 1: affinity 4 of 4 CPUs, cgroup quota 0.25");
  b = make_budget({}, 3, std::nullopt);  // no mask known: the machine
  CHECK(b.cpus == 3);
  CHECK(b.affinity == std::vector<int>{0, 1, 2});
}

TEST_CASE("threads: /proc/stat per-CPU lines, other work's busy CPUs, and the threads beside it") {
  const std::string text =
      "cpu  900 10 300 5000 40 0 6 0 0 0\n"
      "cpu0 400 5 100 2500 20 0 3 0 0 0\n"
      "cpu1 500 5 200 2500 20 0 3 2 0 0\n"
      "cpu7 1 2 3 4\n"                        // an old kernel: user nice system idle only
      "cpu8 1 2 3\n"                          // too short
      "cpuX 1 2 3 4 5\n"                      // not a CPU id
      "intr 123 4 5\n"
      "ctxt 99\n";
  const std::map<int, CpuTicks> t = parse_proc_stat(text);
  REQUIRE(t.size() == 3);  // not cpu8, cpuX or the summary line
  CHECK(t.at(7).busy == 6);
  CHECK(t.at(7).total == 10);
  CHECK(t.at(0).busy == 400 + 5 + 100 + 3);
  CHECK(t.at(0).total == 400 + 5 + 100 + 2500 + 20 + 3);
  CHECK(t.at(1).busy == 500 + 5 + 200 + 3 + 2);  // steal counts as busy
  CHECK(t.at(1).total == 500 + 5 + 200 + 2500 + 20 + 3 + 2);

  // 0.5 s on CPUs 0 and 1 (50 ticks each): CPU 0 fully busy, CPU 1 a fifth.
  const std::map<int, CpuTicks> before{{0, {100, 1000}}, {1, {100, 1000}}};
  const std::map<int, CpuTicks> after{{0, {150, 1050}}, {1, {110, 1050}}};
  CHECK(others_busy_cpus(before, after, {0, 1}, 0.0, 0.5) == doctest::Approx(1.2));
  CHECK(others_busy_cpus(before, after, {0, 1}, 0.25, 0.5) == doctest::Approx(0.7));  // half a CPU was ours
  CHECK(others_busy_cpus(before, after, {1}, 0.0, 0.5) == doctest::Approx(0.2));
  CHECK(others_busy_cpus(before, after, {0, 1}, 2.0, 0.5) == 0.0);  // never below 0
  CHECK(others_busy_cpus(before, after, {5}, 0.0, 0.5) == 0.0);     // a CPU neither reading has

  CHECK(threads_beside(2, 2, 0.0) == 2);
  CHECK(threads_beside(2, 2, 0.7) == 2);   // less than three quarters of a CPU: kept
  CHECK(threads_beside(2, 2, 0.75) == 1);
  CHECK(threads_beside(2, 2, 1.0) == 1);
  CHECK(threads_beside(2, 2, 2.0) == 1);   // at least 1
  CHECK(threads_beside(4, 8, 3.0) == 4);   // a 4-CPU quota on 8 CPUs, 3 busy: 5 left, the quota's 4 taken
  CHECK(threads_beside(4, 8, 5.9) == 2);
  CHECK(threads_beside(16, 16, 1.2) == 15);
}

TEST_CASE("threads: a busy process beside this one shows as contention on the CPU it runs on") {
  const std::vector<int> mine = thread_affinity();
  REQUIRE_FALSE(mine.empty());
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {  // a CPU-bound process pinned to the last CPU of the mask, until killed
    set_thread_affinity({mine.back()});
    for (volatile uint64_t i = 0;; i = i + 1) {
    }
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the child is running
  const std::optional<double> busy = measure_contention({mine.back()}, std::chrono::milliseconds(300));
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  REQUIRE(busy.has_value());
  CHECK(*busy >= 0.75);
  CHECK(*busy <= 1.05);
  CHECK(threads_beside(static_cast<int>(mine.size()), static_cast<int>(mine.size()), *busy) ==
        std::max<int>(1, static_cast<int>(mine.size()) - 1));
}

TEST_CASE("threads: this process's budget follows its affinity mask") {
  const std::vector<int> mine = thread_affinity();
  REQUIRE_FALSE(mine.empty());
  CHECK(detect_thread_budget().affinity == mine);
  // On a thread of its own, pinned to one CPU: a budget of 1.
  ThreadBudget pinned;
  bool set = false;
  std::thread([&] {
    set = set_thread_affinity({mine.back()});
    pinned = detect_thread_budget();
  }).join();
  REQUIRE(set);
  CHECK(pinned.cpus == 1);
  CHECK(pinned.affinity == std::vector<int>{mine.back()});
  CHECK(thread_affinity() == mine);  // this thread's mask is untouched
}

TEST_CASE("threads: --threads > run.threads > OMP_NUM_THREADS > the budget") {
  auto c = choose_threads(3, 5, "7", 2);
  CHECK(c.threads == 3);
  CHECK(c.source == "--threads");
  c = choose_threads(std::nullopt, 5, "7", 2);
  CHECK(c.threads == 5);
  CHECK(c.source == "run.threads");
  c = choose_threads(std::nullopt, 0, "7", 2);
  CHECK(c.threads == 7);
  CHECK(c.source == "OMP_NUM_THREADS");
  c = choose_threads(std::nullopt, 0, "4,2", 2);  // nested levels: the outer one
  CHECK(c.threads == 4);
  c = choose_threads(std::nullopt, 0, std::nullopt, 2);
  CHECK(c.threads == 2);
  CHECK(c.source == "budget");
  CHECK(c.note.empty());
  c = choose_threads(std::nullopt, 0, "abc", 2);
  CHECK(c.threads == 2);
  CHECK(c.source == "budget");
  CHECK(c.note == "OMP_NUM_THREADS \"abc\" is not a positive integer: ignored");
  CHECK(choose_threads(std::nullopt, 0, "0", 3).threads == 3);

  const ThreadBudget b = make_budget({0, 1}, 2, std::nullopt);
  CHECK(describe_threads(choose_threads(std::nullopt, 0, std::nullopt, 2), b) ==
        "threads: 2 compute (budget 2: affinity 2 of 2 CPUs, no cgroup quota)");
  CHECK(describe_threads(choose_threads(1, 0, std::nullopt, 2), b) ==
        "threads: 1 compute from --threads (budget 2: affinity 2 of 2 CPUs, no cgroup quota)");
  CHECK(describe_threads(choose_threads(std::nullopt, 4, std::nullopt, 2), b) ==
        "threads: 4 compute from run.threads (more than the budget 2: affinity 2 of 2 CPUs, no cgroup quota)");
  CHECK(describe_threads(choose_threads(std::nullopt, 0, "x", 2), b) ==
        "threads: 2 compute (budget 2: affinity 2 of 2 CPUs, no cgroup quota); OMP_NUM_THREADS \"x\" is not a "
        "positive integer: ignored");
}

TEST_CASE("threads: auto input stages share the process's count, at most 8") {
  const int saved = process_threads();
  set_process_threads(3);
  CHECK(process_threads() == 3);
  CHECK(auto_input_threads() == 3);
  set_process_threads(20);
  CHECK(auto_input_threads() == 8);
  set_process_threads(saved);
}

TEST_CASE("threads: dtrain launch divides its budget") {
  // Two CPUs, two workers: one each, pinned apart.
  auto s = divide_budget(make_budget({0, 1}, 2, std::nullopt), 2);
  REQUIRE(s.size() == 2);
  CHECK(s[0].threads == 1);
  CHECK(s[0].cpus == std::vector<int>{0});
  CHECK(s[1].cpus == std::vector<int>{1});
  // Five CPUs of a sparse mask, two workers: two each; the fifth goes unused.
  s = divide_budget(make_budget({0, 2, 4, 6, 8}, 16, std::nullopt), 2);
  CHECK(s[0].threads == 2);
  CHECK(s[0].cpus == std::vector<int>{0, 2});
  CHECK(s[1].cpus == std::vector<int>{4, 6});
  // A quota of 4 CPUs on an 8-CPU mask: only four CPUs are handed out.
  s = divide_budget(make_budget({0, 1, 2, 3, 4, 5, 6, 7}, 8, CpuQuota{400000, 100000, ""}), 2);
  CHECK(s[0].cpus == std::vector<int>{0, 1});
  CHECK(s[1].cpus == std::vector<int>{2, 3});
  // Fewer CPUs than workers: one thread each, nothing pinned.
  s = divide_budget(make_budget({0, 1}, 2, std::nullopt), 3);
  REQUIRE(s.size() == 3);
  for (const TaskShare& t : s) {
    CHECK(t.threads == 1);
    CHECK(t.cpus.empty());
  }
  CHECK(cpu_list({0, 1, 2, 3, 8, 10, 11}) == "0-3,8,10-11");
  CHECK(cpu_list({5}) == "5");
}
