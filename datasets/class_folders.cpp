// Class folders' file lists and their holdout split (datasets/class_folders.hpp).
#include "datasets/class_folders.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <system_error>
#include <utility>

namespace dtrain {

namespace fs = std::filesystem;

namespace {

// FNV-1a of the path relative to the folder: where a file falls in the
// holdout split, whatever the listing order or the folder's location.
uint64_t path_hash(const std::string& s) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

}  // namespace

Result<ClassFolderFiles> list_class_names(const DataSourceSpec& spec, const SourceContext& ctx,
                                          const ClassFolderKind& kind) {
  ClassFolderFiles out;
  out.dir = resolve_source_path(spec.dir, ctx.base_dir);
  const std::string& dir = out.dir;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return data_error(fmt::format("{}dir {}: not a directory", ctx.prefix, dir));
  out.classes = spec.classes;
  if (out.classes.empty()) {
    for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
      if (e.is_directory(ec)) out.classes.push_back(e.path().filename().string());
    }
    if (ec) return data_error(fmt::format("{}dir {}: {}", ctx.prefix, dir, ec.message()));
    std::sort(out.classes.begin(), out.classes.end());
  }
  if (out.classes.size() < 2) {
    return data_error(fmt::format("{}dir {}: {} class folder(s); expected one sub-folder of {} per class, at least "
                                  "two (e.g. {}/{})",
                                  ctx.prefix, dir, out.classes.size(), kind.files, dir,
                                  fmt::format(fmt::runtime(kind.example), fmt::arg("dir", dir))));
  }
  for (size_t k = 0; k < out.classes.size(); ++k) {
    if (!fs::is_directory(fs::path(dir) / out.classes[k], ec)) {
      return data_error(fmt::format("{}classes[{}]: {} is not a folder of {}", ctx.prefix, k, out.classes[k], dir));
    }
  }
  return out;
}

Result<ClassFolderFiles> list_class_folders(const DataSourceSpec& spec, const SourceContext& ctx,
                                            const std::string& split, const ClassFolderKind& kind) {
  auto named = list_class_names(spec, ctx, kind);
  if (!named) return named.error();
  ClassFolderFiles out = std::move(*named);
  const std::string& dir = out.dir;
  std::error_code ec;
  for (size_t k = 0; k < out.classes.size(); ++k) {
    const fs::path folder = fs::path(dir) / out.classes[k];
    std::vector<std::pair<uint64_t, std::string>> ranked;
    for (const fs::directory_entry& e : fs::recursive_directory_iterator(folder, ec)) {
      if (e.is_regular_file(ec) && kind.reads(e.path().string())) {
        ranked.emplace_back(path_hash(e.path().lexically_relative(dir).generic_string()), e.path().string());
      }
    }
    if (ec) return data_error(fmt::format("{}{}: {}", ctx.prefix, folder.string(), ec.message()));
    // The held-out share of the class: its files of the smallest hashes.
    std::sort(ranked.begin(), ranked.end());
    const auto held = static_cast<size_t>(std::floor(spec.holdout * static_cast<double>(ranked.size())));
    std::vector<std::string> kept;
    for (size_t i = 0; i < ranked.size(); ++i) {
      if ((i < held) == (split == "holdout")) kept.push_back(ranked[i].second);
    }
    std::sort(kept.begin(), kept.end());
    out.files.push_back(std::move(kept));
  }
  return out;
}

}  // namespace dtrain
