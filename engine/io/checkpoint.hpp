// Checkpoints: one safetensors file per saved step,
// <model_dir>/model.ckpt-<step>.safetensors, holding logical variables,
// optimizer slots ("<variable>/<slot>") and string metadata, plus the index
// <model_dir>/checkpoint (JSON: latest and all kept checkpoints, oldest first).
// Files are written to a temporary name, fsynced, renamed, and the directory
// fsynced, so a crash never leaves a half-written checkpoint or index.
// "Oldest" means lowest step. One process saves into a model_dir at a time
// (the chief); readers may run concurrently with it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/base/status.hpp"
#include "engine/tensor.hpp"

namespace dtrain {

struct CheckpointData {
  int64_t global_step = 0;
  // Free-form string metadata stored in safetensors' "__metadata__". dtrain
  // puts global_step, input_position, model_hash, dtrain_version there.
  std::map<std::string, std::string> metadata;
  // Tensors in save order; names unique.
  std::vector<std::pair<std::string, Tensor>> tensors;

  const Tensor* find(const std::string& name) const;
};

// Writes model.ckpt-<global_step>.safetensors into model_dir (created if
// missing), updates the index, and deletes the oldest checkpoints beyond
// keep_max (keep_max <= 0 keeps all; the one just written is always kept).
// Re-saving a step replaces that file. metadata["global_step"] is written
// from global_step. Returns the path written. Failures (disk full,
// permissions) are kRuntime errors naming the path and the system's reason,
// and leave the earlier checkpoints and index as they were.
Result<std::string> save_checkpoint(const std::string& model_dir, const CheckpointData& data, int64_t keep_max);

// Which checkpoints a save keeps, as tf.train.Saver's max_to_keep and
// keep_checkpoint_every_n_hours.
struct KeepPolicy {
  int64_t max = 5;  // the newest `max` are kept (<= 0: all)
  // Besides those, one checkpoint per this many hours of wall-clock is kept
  // forever: a checkpoint that falls out of `max` is preserved instead of
  // deleted when it was saved at least this long after the index's
  // keep_hours_since (the first save in model_dir, then the last preserved
  // checkpoint's save time). Preserved checkpoints stay in the index (marked
  // "preserved"), so a restarted run keeps them too, and are never deleted.
  std::optional<double> every_n_hours;
  // Unix time of this save; nullopt: the system clock (tests inject one).
  std::optional<double> now;
};
// save_checkpoint with a KeepPolicy; the int64_t overload is {keep_max}.
Result<std::string> save_checkpoint(const std::string& model_dir, const CheckpointData& data,
                                    const KeepPolicy& keep);

// Reads a checkpoint file. Malformed files give a kData error naming the file
// and what is wrong (and the byte offset where it applies). Tensors come back
// in file order; global_step from metadata "global_step" (0 when absent).
// Only F32 tensors are supported.
Result<CheckpointData> load_checkpoint(const std::string& path);

// Latest checkpoint of model_dir from its index (or, if the index is missing
// or unreadable, by scanning for model.ckpt-*.safetensors). nullopt when none.
std::optional<std::string> latest_checkpoint(const std::string& model_dir);
// All kept checkpoints, oldest first.
std::vector<std::string> list_checkpoints(const std::string& model_dir);

// Human-readable listing for `dtrain inspect`: step, metadata, and one line
// per tensor (name, shape, dtype, min/mean/max).
std::string describe_checkpoint(const CheckpointData& data);

}  // namespace dtrain
