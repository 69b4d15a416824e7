// Reading, recovering and writing the checkpoint index (see checkpoint_index.hpp).
#include "engine/io/checkpoint_index.hpp"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <system_error>

#include <nlohmann/json.hpp>

#include "engine/io/file_util.hpp"

namespace dtrain::io {
namespace {

constexpr std::string_view kPrefix = "model.ckpt-";
constexpr std::string_view kSuffix = ".safetensors";

std::string join(const std::string& dir, const std::string& name) {
  return (std::filesystem::path(dir) / name).string();
}

bool exists(const std::string& path) {
  std::error_code ec;
  return std::filesystem::is_regular_file(path, ec);
}

std::optional<std::vector<CheckpointEntry>> parse_index(const std::string& text) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("all") || !j.contains("steps") || !j.contains("latest")) return std::nullopt;
  const auto& all = j["all"];
  const auto& steps = j["steps"];
  if (!all.is_array() || !steps.is_array() || all.size() != steps.size() || all.empty()) return std::nullopt;
  // Optional (written since keep_checkpoint_every_n_hours): save times and preserved names.
  const nlohmann::json times = j.contains("times") ? j["times"] : nlohmann::json::array();
  const nlohmann::json preserved = j.contains("preserved") ? j["preserved"] : nlohmann::json::array();
  if (!times.is_array() || (!times.empty() && times.size() != all.size()) || !preserved.is_array())
    return std::nullopt;
  std::vector<CheckpointEntry> out;
  for (size_t i = 0; i < all.size(); ++i) {
    if (!all[i].is_string() || !steps[i].is_number_integer()) return std::nullopt;
    if (!times.empty() && !times[i].is_number()) return std::nullopt;
    std::string name = all[i].get<std::string>();
    std::optional<int64_t> step = parse_checkpoint_file_name(name);
    if (!step || *step != steps[i].get<int64_t>()) return std::nullopt;
    if (!out.empty() && out.back().step >= *step) return std::nullopt;
    out.push_back({*step, std::move(name), times.empty() ? 0.0 : times[i].get<double>(), false});
  }
  for (const auto& p : preserved) {
    if (!p.is_string()) return std::nullopt;
    const std::string name = p.get<std::string>();
    auto it = std::find_if(out.begin(), out.end(), [&](const CheckpointEntry& e) { return e.name == name; });
    if (it == out.end()) return std::nullopt;
    it->preserved = true;
  }
  if (j["latest"] != out.back().name) return std::nullopt;
  return out;
}

}  // namespace

std::string checkpoint_file_name(int64_t step) {
  return std::string(kPrefix) + std::to_string(step) + std::string(kSuffix);
}

std::optional<int64_t> parse_checkpoint_file_name(std::string_view name) {
  if (name.size() <= kPrefix.size() + kSuffix.size() || !name.starts_with(kPrefix) || !name.ends_with(kSuffix))
    return std::nullopt;
  std::string_view digits = name.substr(kPrefix.size(), name.size() - kPrefix.size() - kSuffix.size());
  if (digits.size() > 1 && digits[0] == '0') return std::nullopt;
  int64_t step = 0;
  auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), step);
  if (ec != std::errc() || p != digits.data() + digits.size() || step < 0) return std::nullopt;
  return step;
}

std::optional<std::vector<CheckpointEntry>> read_checkpoint_index(const std::string& model_dir) {
  Result<std::string> text = read_whole_file(join(model_dir, kIndexFileName), ErrorKind::kData);
  if (!text) return std::nullopt;
  return parse_index(*text);
}

std::vector<CheckpointEntry> scan_checkpoints(const std::string& model_dir) {
  std::vector<CheckpointEntry> out;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(model_dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename().string();
    std::optional<int64_t> step = parse_checkpoint_file_name(name);
    if (step && it->is_regular_file(ec)) out.push_back({*step, std::move(name)});
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.step < b.step; });
  return out;
}

std::vector<CheckpointEntry> kept_checkpoints(const std::string& model_dir) {
  std::vector<CheckpointEntry> kept;
  if (auto index = read_checkpoint_index(model_dir)) {
    for (auto& e : *index)
      if (exists(join(model_dir, e.name))) kept.push_back(std::move(e));
  }
  return kept.empty() ? scan_checkpoints(model_dir) : kept;
}

std::optional<double> read_keep_hours_since(const std::string& model_dir) {
  Result<std::string> text = read_whole_file(join(model_dir, kIndexFileName), ErrorKind::kData);
  if (!text || !parse_index(*text)) return std::nullopt;
  const nlohmann::json j = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (!j.contains("keep_hours_since") || !j["keep_hours_since"].is_number()) return std::nullopt;
  return j["keep_hours_since"].get<double>();
}

std::string checkpoint_index_json(const std::vector<CheckpointEntry>& entries, std::optional<double> keep_hours_since) {
  nlohmann::ordered_json j;
  j["latest"] = entries.empty() ? "" : entries.back().name;
  j["all"] = nlohmann::json::array();
  j["steps"] = nlohmann::json::array();
  j["times"] = nlohmann::json::array();
  j["preserved"] = nlohmann::json::array();
  for (const auto& e : entries) {
    j["all"].push_back(e.name);
    j["steps"].push_back(e.step);
    j["times"].push_back(e.time);
    if (e.preserved) j["preserved"].push_back(e.name);
  }
  if (keep_hours_since) j["keep_hours_since"] = *keep_hours_since;
  return j.dump(2) + "\n";
}

Status write_checkpoint_index(const std::string& model_dir, const std::vector<CheckpointEntry>& entries,
                              std::optional<double> keep_hours_since) {
  const std::string text = checkpoint_index_json(entries, keep_hours_since);
  return write_file_atomic(join(model_dir, kIndexFileName), {text});
}

}  // namespace dtrain::io
