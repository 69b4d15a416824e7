// Saving, loading and finding checkpoints in a model directory (see
// checkpoint.hpp): safetensors files written atomically, plus the index.
#include "engine/io/checkpoint.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <filesystem>

#include <fmt/format.h>

#include "engine/io/checkpoint_index.hpp"
#include "engine/io/file_util.hpp"
#include "engine/io/safetensors.hpp"

namespace dtrain {

using io::CheckpointEntry;

namespace {

std::string join(const std::string& dir, const std::string& name) {
  return (std::filesystem::path(dir) / name).string();
}

// Splits the kept set after adding `added` into what stays (by step) and
// what falls out of keep.max, oldest first. `added` itself always stays;
// preserved entries stay and do not count. An entry falling out that was
// saved at least keep.every_n_hours after `since` is preserved instead, and
// `since` moves to its save time.
void apply_keep_policy(std::vector<CheckpointEntry>& kept, const CheckpointEntry& added, const KeepPolicy& keep,
                       double& since, std::vector<CheckpointEntry>& dropped) {
  std::erase_if(kept, [&](const CheckpointEntry& e) { return e.step == added.step; });
  kept.push_back(added);
  std::sort(kept.begin(), kept.end(), [](const auto& a, const auto& b) { return a.step < b.step; });
  if (keep.max <= 0) return;
  auto counted = [&] {
    return std::count_if(kept.begin(), kept.end(), [](const CheckpointEntry& e) { return !e.preserved; });
  };
  for (auto it = kept.begin(); counted() > keep.max && it != kept.end();) {
    if (it->step == added.step || it->preserved) {
      ++it;
      continue;
    }
    if (keep.every_n_hours && it->time > 0 && it->time >= since + *keep.every_n_hours * 3600.0) {
      it->preserved = true;
      since = it->time;
      ++it;
      continue;
    }
    dropped.push_back(*it);
    it = kept.erase(it);
  }
}

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

const Tensor* CheckpointData::find(const std::string& name) const {
  for (const auto& [n, t] : tensors)
    if (n == name) return &t;
  return nullptr;
}

Result<std::string> save_checkpoint(const std::string& model_dir, const CheckpointData& data, int64_t keep_max) {
  return save_checkpoint(model_dir, data, KeepPolicy{keep_max, std::nullopt, std::nullopt});
}

Result<std::string> save_checkpoint(const std::string& model_dir, const CheckpointData& data,
                                    const KeepPolicy& keep) {
  if (data.global_step < 0)
    return runtime_error(fmt::format("{}: cannot save a checkpoint for negative step {}", model_dir, data.global_step));
  Result<std::string> header = io::encode_safetensors_header(data);
  if (!header) return runtime_error(fmt::format("{}: {}", model_dir, header.error().message));
  if (Status s = io::ensure_directory(model_dir); !s) return s.error();

  const double now = keep.now.value_or(unix_now());
  const CheckpointEntry added{data.global_step, io::checkpoint_file_name(data.global_step), now, false};
  const std::string path = join(model_dir, added.name);
  if (Status s = io::write_file_atomic(path, io::safetensors_pieces(*header, data)); !s) return s.error();

  std::vector<CheckpointEntry> kept = io::kept_checkpoints(model_dir);
  // The hours count from the first save in model_dir (an index without the
  // field: its oldest known save time), then from the last preserved one.
  std::optional<double> since = io::read_keep_hours_since(model_dir);
  if (!since) {
    since = now;
    for (const CheckpointEntry& e : kept)
      if (e.time > 0) since = std::min(*since, e.time);
  }
  std::vector<CheckpointEntry> dropped;
  apply_keep_policy(kept, added, keep, *since, dropped);
  if (Status s = io::write_checkpoint_index(model_dir, kept, since); !s) return s.error();

  // Only now that the new index is durable may files it no longer names go.
  for (const CheckpointEntry& e : dropped) {
    const std::string old = join(model_dir, e.name);
    const int err = ::unlink(old.c_str()) == 0 ? 0 : errno;
    if (err != 0 && err != ENOENT)
      return runtime_error(fmt::format("{}: cannot delete old checkpoint: {} ({} and the index were saved)", old,
                                       io::errno_message(err), path));
  }
  return path;
}

Result<CheckpointData> load_checkpoint(const std::string& path) {
  Result<std::string> bytes = io::read_whole_file(path, ErrorKind::kData);
  if (!bytes) return bytes.error();
  return io::decode_safetensors(*bytes, path);
}

std::vector<std::string> list_checkpoints(const std::string& model_dir) {
  std::vector<std::string> out;
  for (const CheckpointEntry& e : io::kept_checkpoints(model_dir)) out.push_back(join(model_dir, e.name));
  return out;
}

std::optional<std::string> latest_checkpoint(const std::string& model_dir) {
  std::vector<std::string> all = list_checkpoints(model_dir);
  if (all.empty()) return std::nullopt;
  return all.back();
}

}  // namespace dtrain
