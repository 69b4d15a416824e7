// model_dir/run.json: what a training run is doing or how it ended, for
// `dtrain runs` — status (running, finished, stopped, failed), who runs it
// (host, pid), when it started, last saved and ended, its steps and the error
// that ended it. Written by the chief only, atomically, at the start, at each
// checkpoint and at the end.
#pragma once

#include <cstdint>
#include <string>

#include "engine/base/status.hpp"

namespace dtrain {

class RunRecord {
 public:
  // Starts the record of a run in `model_dir` at `step` of `max_steps`.
  Status begin(const std::string& model_dir, int64_t step, int64_t max_steps);
  // A checkpoint at `step` was saved.
  Status saved(int64_t step);
  // Training ended at `step` with `result`: finished when ok, stopped for a
  // stop signal, else failed with the error's message. Errors writing the
  // record are ignored here: they must not hide `result`.
  void end(const Status& result, int64_t step);

 private:
  Status write(const std::string& status, const std::string& error);
  std::string path_;  // "" until begin()
  std::string host_;
  double started_ = 0, updated_ = 0, ended_ = 0;
  int64_t step_ = 0, max_steps_ = 0;
};

}  // namespace dtrain
