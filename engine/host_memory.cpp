// The memory this process can still take (see host_memory.hpp).
#include "engine/host_memory.hpp"

#include <algorithm>
#include <utility>

#include "engine/threads.hpp"

namespace dtrain {
namespace {

std::string_view trim(std::string_view s) {
  const auto first = s.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return {};
  return s.substr(first, s.find_last_not_of(" \t\r\n") - first + 1);
}

// A count: parse_proc_int's, and not negative.
std::optional<int64_t> parse_count(std::string_view s) {
  const auto v = parse_proc_int(s);
  if (!v || *v < 0) return std::nullopt;
  return v;
}

}  // namespace

std::optional<int64_t> parse_mem_available(std::string_view meminfo) {
  constexpr std::string_view kKey = "MemAvailable:";
  for (size_t start = 0; start < meminfo.size();) {
    const size_t end = std::min(meminfo.find('\n', start), meminfo.size());
    std::string_view line = meminfo.substr(start, end - start);
    start = end + 1;
    if (line.substr(0, kKey.size()) != kKey) continue;
    line = trim(line.substr(kKey.size()));
    if (line.size() < 3 || line.substr(line.size() - 2) != "kB") return std::nullopt;
    const auto kib = parse_count(line.substr(0, line.size() - 2));
    if (!kib) return std::nullopt;
    return *kib * 1024;
  }
  return std::nullopt;
}

std::optional<int64_t> parse_memory_limit(std::string_view text) {
  if (trim(text) == "max") return std::nullopt;
  const auto v = parse_count(text);
  if (!v || *v >= (int64_t{1} << 62)) return std::nullopt;  // v1 writes 0x7FFFFFFFFFFFF000 rounded to pages for none
  return v;
}

std::optional<MemoryRoom> memory_room(std::string_view meminfo, const std::vector<std::string>& cgroup_dirs) {
  std::optional<MemoryRoom> best;
  if (const auto available = parse_mem_available(meminfo)) best = MemoryRoom{*available, "MemAvailable"};
  for (const std::string& dir : cgroup_dirs) {
    // v2 names first; a directory has one layout or the other.
    static constexpr std::pair<const char*, const char*> kFiles[] = {{"memory.max", "memory.current"},
                                                                     {"memory.limit_in_bytes", "memory.usage_in_bytes"}};
    for (const auto& [limit_name, usage_name] : kFiles) {
      const std::string limit_file = dir + "/" + limit_name;
      const auto limit_text = read_proc_text(limit_file);
      if (!limit_text) continue;
      const auto limit = parse_memory_limit(*limit_text);
      if (!limit) break;
      const auto usage_text = read_proc_text(dir + "/" + usage_name);
      const int64_t usage = usage_text ? parse_count(*usage_text).value_or(0) : 0;
      const int64_t room = std::max<int64_t>(0, *limit - usage);
      if (!best || room < best->bytes) best = MemoryRoom{room, limit_file};
      break;
    }
  }
  return best;
}

std::optional<MemoryRoom> detect_memory_room() {
  const auto meminfo = read_proc_text("/proc/meminfo");
  const auto proc_cgroup = read_proc_text("/proc/self/cgroup"), mountinfo = read_proc_text("/proc/self/mountinfo");
  std::vector<std::string> dirs;
  if (proc_cgroup && mountinfo) dirs = cgroup_dirs(*proc_cgroup, *mountinfo, "memory");
  return memory_room(meminfo.value_or(""), dirs);
}

}  // namespace dtrain
