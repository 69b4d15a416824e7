// The evaluation report of each model output (engine/metrics/eval_report.hpp)
// as the estimator makes and shows it: gathered from evaluation steps,
// written into eval/metrics-<step>.json ("report"), drawn as a confusion
// matrix image in the eval summaries, and printed by `dtrain evaluate`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "datasets/dataset.hpp"
#include "engine/base/status.hpp"
#include "engine/io/summary_writer.hpp"
#include "engine/metrics/eval_report.hpp"
#include "strategies/program.hpp"
#include "strategies/strategy.hpp"

namespace dtrain {

// One accumulator per output of `program`, in its output order.
std::vector<ReportAccumulator> make_report_accumulators(const Program& program);
// Adds an evaluation step's predictions (step.predictions, one tensor per
// output) and the batch's labels of each output.
// REQUIRES: step came from eval_step(batch).
void add_to_reports(std::vector<ReportAccumulator>& reports, const StepOutput& step, const Batch& batch);
// class_names[j]: output j's class names (empty: the class ids), as the
// data gives them (Input::class_names()).
std::vector<OutputReport> finish_reports(const std::vector<ReportAccumulator>& reports,
                                         const std::vector<std::vector<std::string>>& class_names = {});

// {"outputs": [one object per output]}: the "report" of eval/metrics-<step>.json
// (the keys are listed in man/dtrain.1, FILES).
nlohmann::json report_json(const std::vector<OutputReport>& reports);

// The plain-text report `dtrain evaluate` logs after its metrics: per
// output a table of class, precision, recall, F1 and support (for more than
// 20 classes only the 10 of lowest recall), the averages, top-5 accuracy and
// ROC AUC where defined, and the confusion matrix (20 classes or fewer);
// regression outputs one line of MAE, RMSE and R². `json_path` is named
// where the table leaves something out.
std::string report_text(const std::vector<OutputReport>& reports, const std::string& json_path);

// Each classification output's confusion matrix as a PNG heat map image
// summary at `step`, tagged "confusion_matrix" ("NAME_confusion_matrix" for
// model.outputs' NAME, as the metrics' scalars).
Status write_confusion_images(SummaryWriter& writer, int64_t step, const std::vector<OutputReport>& reports);

}  // namespace dtrain
