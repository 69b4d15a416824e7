// Formatting of failed GPU library calls (see gpu_error.hpp).
#include "engine/cuda/gpu_error.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <atomic>

namespace dtrain::cuda {

namespace {

std::atomic<int> g_rank{-1};

std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return "?";
  return buf;
}

}  // namespace

std::string_view source_root() {
  constexpr std::string_view self = __FILE__;
  constexpr std::string_view self_relative = "engine/cuda/gpu_error.cpp";
  return self.ends_with(self_relative) ? self.substr(0, self.size() - self_relative.size()) : std::string_view();
}

std::string_view source_relative(std::string_view file, std::string_view root) {
  if (!root.empty() && file.starts_with(root)) return file.substr(root.size());
  for (;;) {
    if (file.starts_with("./")) {
      file.remove_prefix(2);
    } else if (file.starts_with("../")) {
      file.remove_prefix(3);
    } else {
      return file;
    }
  }
}

std::string format_gpu_failure(const GpuFailure& f, std::string_view host, int rank) {
  std::string where = f.device >= 0 ? fmt::format(" on gpu:{}", f.device) : std::string();
  std::string who = rank >= 0 ? fmt::format("host {}, rank {}", host, rank) : fmt::format("host {}", host);
  return fmt::format("{}:{}: {} failed{} ({}): {} ({}): {}", source_relative(f.file, source_root()), f.line, f.call,
                     where, who, f.code_name, f.code, f.description);
}

Error gpu_failure_error(const GpuFailure& f) {
  return runtime_error(format_gpu_failure(f, host_name(), gpu_error_rank()));
}

void set_gpu_error_rank(int rank) { g_rank.store(rank, std::memory_order_relaxed); }
int gpu_error_rank() { return g_rank.load(std::memory_order_relaxed); }

}  // namespace dtrain::cuda
