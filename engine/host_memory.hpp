// The memory this process can still take: /proc/meminfo's MemAvailable,
// capped by the room under its cgroups' memory limits. Start-up uses it to
// say whether data read whole fits (datasets/stream_choice.hpp). The parsing
// is written over file text and directories so tests can feed it real files.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dtrain {

struct MemoryRoom {
  int64_t bytes = 0;   // >= 0
  std::string source;  // "MemAvailable", or the limit file of the cgroup that leaves less
};

// MemAvailable of /proc/meminfo's text, in bytes; nullopt when absent.
std::optional<int64_t> parse_mem_available(std::string_view meminfo);

// A cgroup memory limit's text (v2 memory.max, v1 memory.limit_in_bytes), in
// bytes; nullopt for "max", for v1's "no limit" (a value of 2^62 or more) and
// for text that is not a non-negative integer.
std::optional<int64_t> parse_memory_limit(std::string_view text);

// The least of MemAvailable (of `meminfo`) and, for each of `cgroup_dirs`
// (as cgroup_dirs() of engine/threads.hpp gives them), its limit less its
// usage (v2 memory.max - memory.current, v1 memory.limit_in_bytes -
// memory.usage_in_bytes; a level without a limit file is no limit). nullopt
// when nothing is known.
std::optional<MemoryRoom> memory_room(std::string_view meminfo, const std::vector<std::string>& cgroup_dirs);

// memory_room() of this process: /proc/meminfo, /proc/self/cgroup and
// /proc/self/mountinfo, read on every call.
std::optional<MemoryRoom> detect_memory_room();

}  // namespace dtrain
