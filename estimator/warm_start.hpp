// run.warm_start (Estimator's WarmStartSettings): the initial state of a new
// run whose selected variables come from another run's checkpoint.
#pragma once

#include <string>
#include <vector>

#include "engine/base/job_spec.hpp"
#include "engine/io/checkpoint.hpp"
#include "engine/base/status.hpp"
#include "strategies/program.hpp"

namespace dtrain {

struct WarmStart {
  std::string checkpoint;  // the file the values came from
  // Every variable and optimizer slot of the program ("var", "var/slot"):
  // the seeded initial values, with the copied ones replaced. global_step 0.
  CheckpointData state;
  std::vector<std::string> copied;      // "conv2d/kernel", or "head/kernel <- dense_1/kernel" for a rename
  std::vector<std::string> not_filled;  // "dense_1/kernel [128, 5] (not in the checkpoint)", one per variable left
  std::vector<std::string> fresh_slots;  // with slots: true, copied variables whose slots were not in the checkpoint
};

// Resolves spec.from (a checkpoint file, or a directory: its latest
// checkpoint), selects the program's variables whose whole name matches
// spec.vars, maps them through spec.rename and copies them (and, with
// spec.slots, their optimizer slots) over the initial values.
// Errors are kConfig and name the job file place: a missing checkpoint, an
// invalid regex, a regex that selects nothing, a rename of a variable the
// model lacks or vars does not select, a rename source missing from the
// checkpoint (with "did you mean"), a shape mismatch (both names and shapes).
// A malformed checkpoint file is a kData error (load_checkpoint).
Result<WarmStart> make_warm_start(const WarmStartSpec& spec, const Program& program);

}  // namespace dtrain
