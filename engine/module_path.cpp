// Where run-time modules are looked for (engine/module_path.hpp).
#include "engine/module_path.hpp"

#include <filesystem>
#include <system_error>

namespace dtrain {

namespace fs = std::filesystem;

std::vector<ModuleCandidate> module_candidates(std::string_view file, std::string_view env_name, const char* env_value,
                                               std::string_view exe_path, std::string_view build_path) {
  if (env_value && *env_value) return {{env_value, std::string(env_name)}};
  std::vector<ModuleCandidate> out;
  if (!exe_path.empty()) {
    const fs::path dir = fs::path(exe_path).parent_path();
    out.push_back({(dir / ".." / "lib" / file).lexically_normal().string(), "the lib/ beside the executable's bin/"});
    out.push_back({(dir / file).string(), "beside the executable"});
  }
  if (!build_path.empty()) out.push_back({std::string(build_path), "the build tree"});
  return out;
}

std::string this_executable() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : exe.string();
}

}  // namespace dtrain
