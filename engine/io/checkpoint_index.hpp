// The index of kept checkpoints, <model_dir>/checkpoint: JSON
// {"latest": "model.ckpt-300.safetensors", "all": [...], "steps": [...],
//  "times": [...], "preserved": [...], "keep_hours_since": t},
// "all" ordered by step, oldest first; "times" the Unix time of each save;
// "preserved" the names kept forever by run.keep_checkpoint_every_n_hours;
// "keep_hours_since" the time the next preserved checkpoint counts from.
// The last three are optional (indexes of older versions lack them). When the
// index is missing or corrupt, the kept set is recovered by scanning model_dir
// for checkpoint files (save times and preserved marks are then lost).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/base/status.hpp"

namespace dtrain::io {

struct CheckpointEntry {
  int64_t step = 0;
  std::string name;  // file name inside model_dir, "model.ckpt-<step>.safetensors"
  double time = 0;   // Unix time of the save; 0 when unknown (scanned, or an older index)
  bool preserved = false;  // kept forever (keep_checkpoint_every_n_hours), outside keep_max
  bool operator==(const CheckpointEntry&) const = default;
};

inline constexpr const char* kIndexFileName = "checkpoint";

// "model.ckpt-<step>.safetensors". REQUIRES: step >= 0.
std::string checkpoint_file_name(int64_t step);

// The step of a canonical checkpoint file name (no leading zeros, no
// suffixes such as ".tmp-123"); nullopt for any other name.
std::optional<int64_t> parse_checkpoint_file_name(std::string_view name);

// The index's entries, or nullopt when it is missing, unreadable, not the
// expected JSON, names a non-canonical file, or disagrees with itself.
std::optional<std::vector<CheckpointEntry>> read_checkpoint_index(const std::string& model_dir);

// Checkpoint files present in model_dir, by step. Empty if unreadable.
std::vector<CheckpointEntry> scan_checkpoints(const std::string& model_dir);

// The kept checkpoints: the index's entries whose files exist, or, when the
// index is unusable or none of its files exist, the scan.
std::vector<CheckpointEntry> kept_checkpoints(const std::string& model_dir);

// The index's "keep_hours_since" (Unix time), nullopt when absent or unusable.
std::optional<double> read_keep_hours_since(const std::string& model_dir);

// The JSON text of an index over `entries` (sorted by step), with
// "keep_hours_since" when given.
std::string checkpoint_index_json(const std::vector<CheckpointEntry>& entries,
                                  std::optional<double> keep_hours_since = std::nullopt);

// Atomically replaces the index of model_dir (see write_file_atomic).
Status write_checkpoint_index(const std::string& model_dir, const std::vector<CheckpointEntry>& entries,
                              std::optional<double> keep_hours_since = std::nullopt);

}  // namespace dtrain::io
