// The thread budget: how many CPUs this process may use (its affinity mask,
// capped by its cgroup CPU quota), the one thread count that compute
// (OpenMP), the input pipeline's `auto` stages and dtrain launch share, and
// who chose it (--threads > run.threads > OMP_NUM_THREADS > the budget).
// The parsing is written over file text and paths so tests can feed it
// real files of cgroup v1 and v2 layouts.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dtrain {

// A cgroup CPU limit: quota_us of CPU time per period_us, from `file`.
struct CpuQuota {
  int64_t quota_us = 0, period_us = 0;  // both > 0
  std::string file;                     // e.g. /sys/fs/cgroup/job/cpu.max
  double cpus() const { return static_cast<double>(quota_us) / static_cast<double>(period_us); }
  // ceil(quota / period), at least 1: 150000/100000 -> 2.
  int whole_cpus() const;
};

// cgroup v2 cpu.max text, "QUOTA PERIOD" or "max PERIOD": the limit, or
// nullopt for "max" and for text that is not two positive integers.
std::optional<CpuQuota> parse_cpu_max(std::string_view text);
// cgroup v1 cpu.cfs_quota_us and cpu.cfs_period_us texts: nullopt for a quota
// of -1 (no limit) and for text that is not an integer.
std::optional<CpuQuota> parse_cfs_quota(std::string_view quota_text, std::string_view period_text);

// The smallest CPU quota between this process's cgroups and the roots of
// their hierarchies: cgroup v2 cpu.max at each level, and cgroup v1
// cpu.cfs_quota_us / cpu.cfs_period_us of the hierarchy with the cpu
// controller. `proc_cgroup` is the text of /proc/self/cgroup; `mountinfo`
// that of /proc/self/mountinfo, which says where each hierarchy is mounted
// and which cgroup the mount shows (a container sees its own cgroup as "/").
// Missing files and levels are no limit. nullopt when nothing limits.
std::optional<CpuQuota> cgroup_cpu_quota(std::string_view proc_cgroup, std::string_view mountinfo);

// The whole text of a small file (/proc and /sys files report no true size,
// so this reads to the end); nullopt when it cannot be opened.
std::optional<std::string> read_proc_text(const std::string& path);
// An integer written alone (spaces and a line end around it allowed); nullopt otherwise.
std::optional<int64_t> parse_proc_int(std::string_view s);

// The cgroup directories of this process that hold `controller`'s files,
// each from its own cgroup up to the hierarchy's mount point: cgroup v2's
// unified hierarchy, and the cgroup v1 hierarchy with `controller` ("memory",
// "cpu"). Texts as cgroup_cpu_quota's; empty when there are none.
std::vector<std::string> cgroup_dirs(std::string_view proc_cgroup, std::string_view mountinfo,
                                     std::string_view controller);

struct ThreadBudget {
  int cpus = 1;               // the budget: the affinity CPUs capped by the quota, rounded up, at least 1
  std::vector<int> affinity;  // the CPU ids of the affinity mask, ascending
  int machine_cpus = 0;       // CPUs online
  std::optional<CpuQuota> quota;
  // CPUs of the affinity mask that other work kept busy at start-up
  // (measure_contention); nullopt when not measured.
  std::optional<double> others_busy;
  // "budget 2: affinity 2 of 16 CPUs, cgroup quota 1.5" (or "no cgroup quota"),
  // then "; 1.0 of them busy with other work at start-up" when measured.
  std::string describe() const;
};

// The budget of `affinity` (CPU ids) on a machine of `machine_cpus`, capped by `quota`.
ThreadBudget make_budget(std::vector<int> affinity, int machine_cpus, std::optional<CpuQuota> quota);

// This process's budget: sched_getaffinity, /proc/self/cgroup and
// /proc/self/mountinfo, read on every call.
ThreadBudget detect_thread_budget();

// The calling thread's affinity mask as CPU ids (empty when it cannot be read),
// and setting it (false with errno set when the kernel refuses). Threads and
// processes started afterwards inherit it.
std::vector<int> thread_affinity();
bool set_thread_affinity(const std::vector<int>& cpus);

// A CPU's time in /proc/stat's clock ticks: busy is everything but idle and iowait.
struct CpuTicks {
  int64_t busy = 0, total = 0;
};
// The per-CPU lines of /proc/stat text ("cpuN user nice system idle iowait
// irq softirq steal ..."), by CPU id; the summary line "cpu" and lines that
// do not parse are left out.
std::map<int, CpuTicks> parse_proc_stat(std::string_view text);

// How many of `cpus` other work kept busy between two /proc/stat readings
// `wall_seconds` apart, during which this process used `own_cpu_seconds` of
// CPU time: the busy share of their ticks times their count, less this
// process's share, at least 0. CPUs missing from a reading are left out.
double others_busy_cpus(const std::map<int, CpuTicks>& before, const std::map<int, CpuTicks>& after,
                        const std::vector<int>& cpus, double own_cpu_seconds, double wall_seconds);

// The compute threads for a budget of `budget` CPUs on an affinity mask of
// `mask_cpus` CPUs when other work keeps `others_busy` of those busy: the
// budget, but no more than the mask's CPUs less one for each CPU the other
// work takes at least three quarters of (an OpenMP thread that shares a core
// with a busy process holds up its whole team at every barrier), at least 1.
int threads_beside(int budget, int mask_cpus, double others_busy);

// others_busy_cpus of `cpus` over `window`, the calling thread sleeping; nullopt
// when /proc/stat cannot be read.
std::optional<double> measure_contention(const std::vector<int>& cpus, std::chrono::milliseconds window);

// A compute thread count and where it came from.
struct ThreadChoice {
  int threads = 1;
  std::string source;  // "--threads", "run.threads", "OMP_NUM_THREADS" or "budget"
  std::string note;    // why a given value was not used ("" when none), e.g. an OMP_NUM_THREADS that is no count
};

// The precedence: `cli` (--threads, >= 1) > `job` (run.threads; 0 = auto) >
// `omp_env` (OMP_NUM_THREADS as set, its first comma-separated entry when a
// positive integer) > `budget`.
ThreadChoice choose_threads(std::optional<int> cli, int64_t job, const std::optional<std::string>& omp_env,
                            int budget);

// OMP_NUM_THREADS of this process's environment, nullopt when unset.
std::optional<std::string> omp_num_threads_env();

// What a process does at start: detects its budget, chooses by
// choose_threads (with this process's OMP_NUM_THREADS), sets the process's
// thread count, and returns the choice and its describe_threads line. When
// the count is the budget's and `measure` is set, it first measures the
// contention on the budget's CPUs for 100 ms and takes threads_beside of it
// (run.deterministic jobs pass false: their count never depends on timing).
struct AppliedThreads {
  ThreadChoice choice;
  ThreadBudget budget;
  std::string line;
};
AppliedThreads apply_compute_threads(std::optional<int> cli, int64_t job, bool measure = true);

// This process's thread count: what compute uses and what `auto` stages share.
// Until set_process_threads: the detected budget. Thread-safe.
int process_threads();
// Sets the process's thread count and the calling thread's OpenMP teams
// (omp_set_num_threads, which the replica threads divide). REQUIRES: n >= 1.
void set_process_threads(int n);
// Threads of a `num_parallel_calls: auto` input stage: process_threads(), at most 8.
int auto_input_threads();

// "threads: 2 compute (budget 2: affinity 2 of 16 CPUs, cgroup quota 2.0)", with
// the source of an explicit count ("1 compute from --threads; budget ...").
std::string describe_threads(const ThreadChoice& choice, const ThreadBudget& budget);

// One compute task's share of dtrain launch's budget.
struct TaskShare {
  int threads = 1;        // --threads for the task
  std::vector<int> cpus;  // its own CPUs; empty when it is not pinned
};

// Divides budget.cpus CPUs (the first of budget.affinity) between `tasks`
// compute tasks (workers, chief): each gets budget.cpus / tasks threads, at
// least 1, and, when there are at least as many CPUs as tasks, its own CPUs
// (disjoint; the remainder of the division goes unused so that no worker is
// the straggler). With fewer CPUs than tasks nothing is pinned.
// REQUIRES: tasks >= 1.
std::vector<TaskShare> divide_budget(const ThreadBudget& budget, int tasks);

// "0-3,8" for CPU ids.
std::string cpu_list(const std::vector<int>& cpus);

}  // namespace dtrain
