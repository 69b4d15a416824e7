// Sharding among workers by file or by example (see shard.hpp).
#include "datasets/shard.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <utility>

namespace dtrain {

std::vector<std::vector<int64_t>> split_by_file(const std::vector<int64_t>& file_starts, int64_t begin, int64_t count) {
  assert(begin >= 0 && count >= 1 && !file_starts.empty() && file_starts[0] == 0);
  std::vector<std::vector<int64_t>> out;
  const int64_t end = begin + count;
  for (size_t f = 0; f < file_starts.size(); ++f) {
    const int64_t lo = std::max(file_starts[f], begin);
    const int64_t hi = std::min(f + 1 < file_starts.size() ? file_starts[f + 1] : end, end);
    if (lo >= hi) continue;
    std::vector<int64_t> file(static_cast<size_t>(hi - lo));
    for (int64_t i = lo; i < hi; ++i) file[static_cast<size_t>(i - lo)] = i;
    out.push_back(std::move(file));
  }
  return out;
}

Result<ShardChoice> shard_files(std::vector<std::vector<int64_t>> files, const std::string& policy, int num_workers,
                                int worker_index, const std::string& prefix) {
  assert(num_workers >= 1 && worker_index >= 0 && worker_index < num_workers);
  if (policy != "auto" && policy != "file" && policy != "data" && policy != "off") {
    return config_error(fmt::format("{}shard \"{}\" is not one of auto, file, data, off", prefix, policy));
  }
  ShardChoice out;
  out.policy = policy;
  const auto n = static_cast<size_t>(num_workers), k = static_cast<size_t>(worker_index);
  if (num_workers == 1 || policy == "off") {
    out.used = "off";
    out.files = std::move(files);
  } else if (policy == "file") {
    if (files.size() < n) {
      return config_error(fmt::format("{}shard: file needs at least as many files as workers, got {} file{} for {} workers",
                                      prefix, files.size(), files.size() == 1 ? "" : "s", num_workers));
    }
    out.used = "file";
    for (size_t f = k; f < files.size(); f += n) out.files.push_back(std::move(files[f]));
  } else {
    out.used = "data";
    out.files = std::move(files);
  }
  for (const auto& file : out.files) out.num_examples += static_cast<int64_t>(file.size());
  if (out.used == "data" && out.num_examples < num_workers) {
    return config_error(fmt::format("{}shard: data needs at least one example per worker, got {} example{} for {} workers",
                                    prefix, out.num_examples, out.num_examples == 1 ? "" : "s", num_workers));
  }
  if (out.num_examples == 0) {
    return config_error(fmt::format("{}shard: {} leaves worker {} of {} no examples", prefix, out.used, worker_index,
                                    num_workers));
  }
  return out;
}

std::pair<int64_t, int64_t> worker_rows(int64_t rows, int workers, int worker, const std::vector<int64_t>& cuts) {
  const auto w = static_cast<size_t>(worker);
  if (cuts.size() == static_cast<size_t>(workers) + 1 && cuts.back() == rows) return {cuts[w], cuts[w + 1]};
  return {rows * worker / workers, rows * (worker + 1) / workers};
}

}  // namespace dtrain
