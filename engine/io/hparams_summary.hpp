// TensorBoard's HParams plugin summaries, as its Python API writes them
// (tensorboard/plugins/hparams/summary_v2.py): each is a Summary.Value with
// tag _hparams_/experiment, _hparams_/session_start_info or
// _hparams_/session_end_info, plugin_name "hparams", content a serialized
// HParamsPluginData (version 0), and an empty float tensor of shape [0].
// A session is the TensorBoard run (directory) whose event file holds the
// start info; its metrics are scalars in runs below it (MetricName.group).
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "engine/base/status.hpp"
#include "engine/io/summary_writer.hpp"

namespace dtrain {

// One hyperparameter of a session: a string, a number or a bool.
struct HParam {
  std::string name;
  std::variant<std::string, double, bool> value;
  std::string description;  // Markdown, shown by the plugin; only in the experiment
};

// A metric of the experiment: the scalar `tag` of the run `group` below the
// session's directory ("" for the session's own).
struct HParamMetric {
  std::string group, tag;
  bool validation = false;  // DATASET_VALIDATION, else DATASET_TRAINING
  std::string description;
};

enum class SessionStatus { kUnknown = 0, kSuccess = 1, kFailure = 2, kRunning = 3 };  // api.proto's Status

// _hparams_/experiment: every hparam's name, type and description (no
// domain, so that sessions of other jobs in one TensorBoard are not filtered
// out) and the metrics.
Status write_hparams_experiment(SummaryWriter& writer, int64_t step, const std::vector<HParam>& hparams,
                                const std::vector<HParamMetric>& metrics, double time_created_secs);
// _hparams_/session_start_info: the session's values; `model_uri` where its
// checkpoints are.
Status write_hparams_session_start(SummaryWriter& writer, int64_t step, const std::vector<HParam>& hparams,
                                   const std::string& model_uri, double start_time_secs);
// _hparams_/session_end_info.
Status write_hparams_session_end(SummaryWriter& writer, int64_t step, SessionStatus status, double end_time_secs);

}  // namespace dtrain
