// The thread budget (see threads.hpp): affinity mask, cgroup CPU quota, the
// precedence of explicit thread counts, and dtrain launch's division.
#include "engine/threads.hpp"

#include <fmt/format.h>
#include <omp.h>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

namespace dtrain {
namespace {

std::string_view trim(std::string_view s) {
  const auto first = s.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return {};
  return s.substr(first, s.find_last_not_of(" \t\r\n") - first + 1);
}


std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  for (size_t start = 0;;) {
    const size_t at = s.find(sep, start);
    parts.push_back(s.substr(start, at == std::string_view::npos ? std::string_view::npos : at - start));
    if (at == std::string_view::npos) return parts;
    start = at + 1;
  }
}

// mountinfo writes space, tab, newline and backslash in paths as \ooo.
std::string unescape_mount_path(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size()) {
      const std::string_view oct = s.substr(i + 1, 3);
      if (oct.size() == 3 && std::all_of(oct.begin(), oct.end(), [](char c) { return c >= '0' && c <= '7'; })) {
        out.push_back(static_cast<char>((oct[0] - '0') * 64 + (oct[1] - '0') * 8 + (oct[2] - '0')));
        i += 3;
        continue;
      }
    }
    out.push_back(s[i]);
  }
  return out;
}

struct Mount {
  std::string root, point, fstype;
  std::vector<std::string_view> super_options;
};

// The mounts of cgroup ("cgroup") or cgroup2 ("cgroup2") filesystems.
std::vector<Mount> cgroup_mounts(std::string_view mountinfo) {
  std::vector<Mount> mounts;
  for (std::string_view line : split(mountinfo, '\n')) {
    std::vector<std::string_view> fields;
    for (std::string_view f : split(line, ' ')) {
      if (!f.empty()) fields.push_back(f);
    }
    // ID PARENT MAJ:MIN ROOT MOUNT_POINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER_OPTIONS
    const auto dash = std::find(fields.begin(), fields.end(), "-");
    if (fields.size() < 6 || dash == fields.end() || fields.end() - dash < 4) continue;
    Mount m;
    m.root = unescape_mount_path(fields[3]);
    m.point = unescape_mount_path(fields[4]);
    m.fstype = std::string(dash[1]);
    if (m.fstype != "cgroup" && m.fstype != "cgroup2") continue;
    m.super_options = split(dash[3], ',');
    mounts.push_back(std::move(m));
  }
  return mounts;
}

// The directory of cgroup `path` under a mount that shows cgroup `m.root`:
// the mount point itself when the mount shows another part of the hierarchy
// (a container's own cgroup).
std::string cgroup_dir(const Mount& m, std::string_view path) {
  if (m.root == "/") return m.point + (path == "/" ? "" : std::string(path));
  if (path == m.root) return m.point;
  if (path.size() > m.root.size() && path.substr(0, m.root.size()) == m.root && path[m.root.size()] == '/') {
    return m.point + std::string(path.substr(m.root.size()));
  }
  return m.point;
}

// The smaller limit (in CPUs) of two.
void keep_smaller(std::optional<CpuQuota>& best, std::optional<CpuQuota> q) {
  if (q && (!best || q->cpus() < best->cpus())) best = std::move(q);
}

// Calls visit(d) for `dir` and each level above it up to `top` (the mount point).
template <class Visit>
void walk_up(std::string dir, const std::string& top, Visit visit) {
  for (;;) {
    visit(dir);
    if (dir.size() <= top.size()) return;
    const size_t slash = dir.rfind('/');
    if (slash == std::string::npos || slash < top.size()) return;
    dir.resize(slash);
  }
}

// One cgroup level's CPU limit: v2's cpu.max, or v1's cpu.cfs_quota_us / cpu.cfs_period_us.
std::optional<CpuQuota> read_cpu_quota(const std::string& dir) {
  std::optional<CpuQuota> q;
  std::string file = dir + "/cpu.max";
  if (auto text = read_proc_text(file)) {
    q = parse_cpu_max(*text);
  } else {
    file = dir + "/cpu.cfs_quota_us";
    auto quota = read_proc_text(file), period = read_proc_text(dir + "/cpu.cfs_period_us");
    if (quota && period) q = parse_cfs_quota(*quota, *period);
  }
  if (q) q->file = file;
  return q;
}

}  // namespace

std::optional<std::string> read_proc_text(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::optional<int64_t> parse_proc_int(std::string_view s) {
  s = trim(s);
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

int CpuQuota::whole_cpus() const {
  return static_cast<int>(std::max<int64_t>(1, (quota_us + period_us - 1) / period_us));
}

std::optional<CpuQuota> parse_cpu_max(std::string_view text) {
  std::vector<std::string_view> fields;
  for (std::string_view f : split(trim(text), ' ')) {
    if (!f.empty()) fields.push_back(f);
  }
  if (fields.size() != 2 || fields[0] == "max") return std::nullopt;
  const auto quota = parse_proc_int(fields[0]), period = parse_proc_int(fields[1]);
  if (!quota || !period || *quota <= 0 || *period <= 0) return std::nullopt;
  return CpuQuota{*quota, *period, ""};
}

std::optional<CpuQuota> parse_cfs_quota(std::string_view quota_text, std::string_view period_text) {
  const auto quota = parse_proc_int(quota_text), period = parse_proc_int(period_text);
  if (!quota || !period || *quota <= 0 || *period <= 0) return std::nullopt;  // -1: no limit
  return CpuQuota{*quota, *period, ""};
}

std::optional<CpuQuota> cgroup_cpu_quota(std::string_view proc_cgroup, std::string_view mountinfo) {
  std::optional<CpuQuota> best;
  for (const std::string& dir : cgroup_dirs(proc_cgroup, mountinfo, "cpu")) keep_smaller(best, read_cpu_quota(dir));
  return best;
}

std::string ThreadBudget::describe() const {
  std::string quota_text = "no cgroup quota";
  if (quota) {
    std::string cpus = fmt::format("{:.2f}", quota->cpus());
    while (cpus.back() == '0' && cpus[cpus.size() - 2] != '.') cpus.pop_back();
    quota_text = "cgroup quota " + cpus;
  }
  std::string text =
      fmt::format("budget {}: affinity {} of {} CPUs, {}", this->cpus, affinity.size(), machine_cpus, quota_text);
  if (others_busy) text += fmt::format("; {:.1f} of them busy with other work at start-up", *others_busy);
  return text;
}

ThreadBudget make_budget(std::vector<int> affinity, int machine_cpus, std::optional<CpuQuota> quota) {
  ThreadBudget b;
  b.machine_cpus = std::max(1, machine_cpus);
  if (affinity.empty()) {  // no mask known: every CPU
    for (int i = 0; i < b.machine_cpus; ++i) affinity.push_back(i);
  }
  std::sort(affinity.begin(), affinity.end());
  b.affinity = std::move(affinity);
  b.machine_cpus = std::max(b.machine_cpus, static_cast<int>(b.affinity.size()));
  b.cpus = static_cast<int>(b.affinity.size());
  if (quota) b.cpus = std::min(b.cpus, quota->whole_cpus());
  b.cpus = std::max(1, b.cpus);
  b.quota = std::move(quota);
  return b;
}

std::vector<int> thread_affinity() {
  std::vector<int> affinity;
  // The mask may name CPUs beyond CPU_SETSIZE: grow the set until it fits.
  for (int n = CPU_SETSIZE; n <= (1 << 20); n *= 2) {
    cpu_set_t* set = CPU_ALLOC(n);
    const size_t size = CPU_ALLOC_SIZE(n);
    CPU_ZERO_S(size, set);
    const bool ok = sched_getaffinity(0, size, set) == 0;
    const int err = errno;
    for (int cpu = 0; ok && cpu < n; ++cpu) {
      if (CPU_ISSET_S(cpu, size, set)) affinity.push_back(cpu);
    }
    CPU_FREE(set);
    if (ok || err != EINVAL) break;
  }
  return affinity;
}

bool set_thread_affinity(const std::vector<int>& cpus) {
  const int n = cpus.empty() ? 1 : std::max(CPU_SETSIZE, *std::max_element(cpus.begin(), cpus.end()) + 1);
  cpu_set_t* set = CPU_ALLOC(n);
  const size_t size = CPU_ALLOC_SIZE(n);
  CPU_ZERO_S(size, set);
  for (int cpu : cpus) CPU_SET_S(cpu, size, set);
  const bool ok = sched_setaffinity(0, size, set) == 0;
  const int err = errno;
  CPU_FREE(set);
  errno = err;
  return ok;
}

std::vector<std::string> cgroup_dirs(std::string_view proc_cgroup, std::string_view mountinfo,
                                     std::string_view controller) {
  const std::vector<Mount> mounts = cgroup_mounts(mountinfo);
  std::vector<std::string> dirs;
  for (std::string_view line : split(proc_cgroup, '\n')) {
    const size_t first = line.find(':'), second = first == std::string_view::npos ? first : line.find(':', first + 1);
    if (second == std::string_view::npos) continue;
    const std::string_view controllers = line.substr(first + 1, second - first - 1);
    const std::string_view path = trim(line.substr(second + 1));
    if (path.empty() || path[0] != '/') continue;
    const bool v2 = line.substr(0, first) == "0" && controllers.empty();
    const std::vector<std::string_view> names = split(controllers, ',');
    if (!v2 && std::find(names.begin(), names.end(), controller) == names.end()) continue;
    for (const Mount& m : mounts) {
      if (v2 != (m.fstype == "cgroup2")) continue;
      if (!v2 && std::find(m.super_options.begin(), m.super_options.end(), controller) == m.super_options.end()) {
        continue;
      }
      walk_up(cgroup_dir(m, path), m.point, [&dirs](const std::string& dir) { dirs.push_back(dir); });
      break;  // one mount per hierarchy
    }
  }
  return dirs;
}

ThreadBudget detect_thread_budget() {
  std::optional<CpuQuota> quota;
  auto proc_cgroup = read_proc_text("/proc/self/cgroup"), mountinfo = read_proc_text("/proc/self/mountinfo");
  if (proc_cgroup && mountinfo) quota = cgroup_cpu_quota(*proc_cgroup, *mountinfo);
  return make_budget(thread_affinity(), static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN)), std::move(quota));
}

ThreadChoice choose_threads(std::optional<int> cli, int64_t job, const std::optional<std::string>& omp_env,
                            int budget) {
  if (cli) return {*cli, "--threads", ""};
  if (job > 0) return {static_cast<int>(job), "run.threads", ""};
  std::string note;
  if (omp_env) {
    // OpenMP's list form "4,2" gives the outer level first.
    const std::string_view first = split(*omp_env, ',')[0];
    if (const auto n = parse_proc_int(first); n && *n >= 1 && *n <= 1 << 20) {
      return {static_cast<int>(*n), "OMP_NUM_THREADS", ""};
    }
    note = fmt::format("OMP_NUM_THREADS \"{}\" is not a positive integer: ignored", *omp_env);
  }
  return {std::max(1, budget), "budget", note};
}

std::optional<std::string> omp_num_threads_env() {
  const char* v = std::getenv("OMP_NUM_THREADS");
  return v == nullptr ? std::nullopt : std::optional<std::string>(v);
}

std::map<int, CpuTicks> parse_proc_stat(std::string_view text) {
  std::map<int, CpuTicks> cpus;
  for (std::string_view line : split(text, '\n')) {
    if (line.size() < 4 || line.substr(0, 3) != "cpu" || line[3] < '0' || line[3] > '9') continue;
    std::vector<int64_t> fields;
    bool ok = true;
    for (std::string_view f : split(trim(line), ' ')) {
      if (f.empty()) continue;
      if (fields.empty() && f.substr(0, 3) == "cpu") f.remove_prefix(3);
      int64_t v = 0;
      const auto [end, ec] = std::from_chars(f.data(), f.data() + f.size(), v);
      if (ec != std::errc() || end != f.data() + f.size() || v < 0) {
        ok = false;
        break;
      }
      fields.push_back(v);
    }
    // id, then user nice system idle (iowait irq softirq steal, where the kernel has them).
    if (!ok || fields.size() < 5) continue;
    CpuTicks t;
    for (size_t i = 1; i < fields.size() && i <= 8; ++i) {
      t.total += fields[i];
      if (i != 4 && i != 5) t.busy += fields[i];  // idle, iowait
    }
    cpus[static_cast<int>(fields[0])] = t;
  }
  return cpus;
}

double others_busy_cpus(const std::map<int, CpuTicks>& before, const std::map<int, CpuTicks>& after,
                        const std::vector<int>& cpus, double own_cpu_seconds, double wall_seconds) {
  int64_t busy = 0, total = 0;
  int counted = 0;
  for (int c : cpus) {
    const auto b = before.find(c), a = after.find(c);
    if (b == before.end() || a == after.end()) continue;
    busy += std::max<int64_t>(0, a->second.busy - b->second.busy);
    total += std::max<int64_t>(0, a->second.total - b->second.total);
    ++counted;
  }
  if (total <= 0 || counted == 0) return 0.0;
  const double all = static_cast<double>(busy) / static_cast<double>(total) * counted;
  const double own = wall_seconds > 0 ? own_cpu_seconds / wall_seconds : 0.0;
  return std::max(0.0, all - own);
}

int threads_beside(int budget, int mask_cpus, double others_busy) {
  const int taken = static_cast<int>(std::floor(std::max(0.0, others_busy) + 0.25));
  return std::max(1, std::min(budget, mask_cpus - taken));
}

namespace {
double own_cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}
}  // namespace

std::optional<double> measure_contention(const std::vector<int>& cpus, std::chrono::milliseconds window) {
  const auto before_text = read_proc_text("/proc/stat");
  if (!before_text) return std::nullopt;
  const double own_before = own_cpu_seconds();
  const auto start = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(window);
  const auto after_text = read_proc_text("/proc/stat");
  if (!after_text) return std::nullopt;
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return others_busy_cpus(parse_proc_stat(*before_text), parse_proc_stat(*after_text), cpus,
                          own_cpu_seconds() - own_before, wall);
}

AppliedThreads apply_compute_threads(std::optional<int> cli, int64_t job, bool measure) {
  AppliedThreads a;
  a.budget = detect_thread_budget();
  a.choice = choose_threads(cli, job, omp_num_threads_env(), a.budget.cpus);
  if (measure && a.choice.source == "budget") {
    a.budget.others_busy = measure_contention(a.budget.affinity, std::chrono::milliseconds(100));
    if (a.budget.others_busy) {
      a.choice.threads =
          threads_beside(a.budget.cpus, static_cast<int>(a.budget.affinity.size()), *a.budget.others_busy);
    }
  }
  set_process_threads(a.choice.threads);
  a.line = describe_threads(a.choice, a.budget);
  return a;
}

namespace {
std::atomic<int> g_process_threads{0};  // 0 until set or first asked
}  // namespace

int process_threads() {
  int n = g_process_threads.load();
  if (n > 0) return n;
  int expected = 0;
  n = detect_thread_budget().cpus;
  g_process_threads.compare_exchange_strong(expected, n);
  return g_process_threads.load();
}

void set_process_threads(int n) {
  g_process_threads.store(std::max(1, n));
  omp_set_num_threads(std::max(1, n));
}

int auto_input_threads() { return std::min(process_threads(), 8); }

std::string describe_threads(const ThreadChoice& choice, const ThreadBudget& budget) {
  std::string text = fmt::format("threads: {} compute", choice.threads);
  if (choice.source != "budget") text += " from " + choice.source;
  text += fmt::format(" ({}{})", choice.source != "budget" && choice.threads > budget.cpus ? "more than the " : "",
                      budget.describe());
  if (!choice.note.empty()) text += "; " + choice.note;
  return text;
}

std::vector<TaskShare> divide_budget(const ThreadBudget& budget, int tasks) {
  std::vector<TaskShare> shares(static_cast<size_t>(std::max(1, tasks)));
  const int per_task = std::max(1, budget.cpus / static_cast<int>(shares.size()));
  const bool pinned = budget.cpus >= static_cast<int>(shares.size());
  for (size_t t = 0; t < shares.size(); ++t) {
    shares[t].threads = per_task;
    if (!pinned) continue;
    for (int i = 0; i < per_task; ++i) {
      shares[t].cpus.push_back(budget.affinity[t * static_cast<size_t>(per_task) + static_cast<size_t>(i)]);
    }
  }
  return shares;
}

std::string cpu_list(const std::vector<int>& cpus) {
  std::string out;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!out.empty()) out += ",";
    out += j == i ? std::to_string(cpus[i]) : fmt::format("{}-{}", cpus[i], cpus[j]);
    i = j + 1;
  }
  return out;
}

}  // namespace dtrain
