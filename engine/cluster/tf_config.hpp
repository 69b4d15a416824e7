// TF_CONFIG, TensorFlow's cluster description in an environment variable:
// {"cluster": {"chief": [...], "worker": [...], "ps": [...], "evaluator": [...]},
//  "task": {"type": "worker", "index": 1}}.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/cluster/cluster.hpp"
#include "engine/base/status.hpp"

namespace dtrain {

struct TfConfig {
  ClusterSpec cluster;  // empty lists are dropped; sparse types renumbered densely
  TaskSpec task;        // task.type "" when TF_CONFIG has no task; in `cluster`'s numbering
  // How legacy or sparse forms were read, one sentence each, for start-up and
  // `dtrain cluster`.
  std::vector<std::string> notes;
};

// Parses TF_CONFIG's text. As TensorFlow: other top-level keys (rpc_layer,
// environment, session_master) are ignored; task.index may be an integer or a
// string holding one (TensorFlow calls int() on it); a missing task.index is an
// error (TensorFlow's RunConfig: "task index must be set"); "cluster" absent
// gives an empty cluster. Two forms TensorFlow accepts are read with its
// meaning and noted: the TF 1.x task type "master" (cluster key and task type)
// is the chief, as RunConfig treats it (both master and chief is an error);
// a task type given as an object of index -> address (ClusterSpec's sparse
// form, {"0": "h0:2222", "3": "h3:2222"}) is numbered 0, 1, ... in index order,
// and task.index is translated (an index the object lacks, a key that is not a
// whole number >= 0, or one given twice is an error). Stricter than TensorFlow: a non-integral numeric index
// is refused (int() would truncate it), and so are cluster types other than
// chief/worker/ps/evaluator (with a did-you-mean). Errors are kConfig, start
// with "TF_CONFIG: ", and invalid JSON names the parser's line and column.
// Checks of the task against the cluster are validate_cluster's.
Result<TfConfig> parse_tf_config(std::string_view text);

}  // namespace dtrain
