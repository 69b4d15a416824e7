// The evaluation report's accumulation over eval steps, its JSON, its text
// table for `dtrain evaluate` and its confusion matrix image summaries.
#include "estimator/eval_report_output.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <numeric>

#include "engine/metrics/confusion_image.hpp"

namespace dtrain {

namespace {
// `dtrain evaluate` prints every class up to this many, else the 10 of lowest recall.
constexpr size_t kTableMaxClasses = 20;
constexpr size_t kTableWorstClasses = 10;
}  // namespace

std::vector<ReportAccumulator> make_report_accumulators(const Program& program) {
  std::vector<ReportAccumulator> out;
  for (size_t j = 0; j < program.outputs.size(); ++j) {
    const ProgramOutput& o = program.outputs[j];
    Result<LossKind> kind = parse_loss_kind(o.loss->name());
    assert(kind.ok() && "make_program made the loss from its name");
    out.emplace_back(o.name, *kind, program.model->outputs()[j].shape);
  }
  return out;
}

void add_to_reports(std::vector<ReportAccumulator>& reports, const StepOutput& step, const Batch& batch) {
  assert(step.predictions.size() == reports.size() || step.predictions.empty());
  for (size_t j = 0; j < step.predictions.size(); ++j) {
    reports[j].add(step.predictions[j], j == 0 ? batch.labels : batch.extra_labels.at(j - 1));
  }
}

std::vector<OutputReport> finish_reports(const std::vector<ReportAccumulator>& reports,
                                         const std::vector<std::vector<std::string>>& class_names) {
  std::vector<OutputReport> out;
  for (size_t j = 0; j < reports.size(); ++j) {
    out.push_back(reports[j].result(j < class_names.size() ? class_names[j] : std::vector<std::string>{}));
  }
  return out;
}

namespace {

void put_averages(nlohmann::json& j, const char* average, const ClassScores& s) {
  j[fmt::format("precision_{}", average)] = s.precision;
  j[fmt::format("recall_{}", average)] = s.recall;
  j[fmt::format("f1_{}", average)] = s.f1;
}

nlohmann::json output_json(const OutputReport& r) {
  nlohmann::json j{{"output", r.output}, {"loss", r.loss}, {"kind", r.kind}};
  if (!r.note.empty()) j["note"] = r.note;
  if (r.kind == "regression") {
    j["values"] = r.regression.values;
    j["mae"] = r.regression.mae;
    j["rmse"] = r.regression.rmse;
    j["r2"] = r.regression.r2;
    return j;
  }
  if (r.kind != "classification") return j;
  const ClassificationReport& c = r.classification;
  j["num_classes"] = c.num_classes;
  j["decisions"] = c.decisions;
  j["accuracy"] = c.accuracy;
  put_averages(j, "macro", c.macro);
  put_averages(j, "micro", c.micro);
  put_averages(j, "weighted", c.weighted);
  if (c.top_k_accuracy) j[fmt::format("top_{}_accuracy", kReportTopK)] = *c.top_k_accuracy;
  if (c.binary) j["roc_auc"] = c.roc_auc ? nlohmann::json(*c.roc_auc) : nlohmann::json(nullptr);
  if (!c.per_class.empty()) {
    j["classes"] = c.class_names;
    nlohmann::json rows = nlohmann::json::array();
    for (size_t k = 0; k < c.per_class.size(); ++k) {
      rows.push_back({{"class", c.class_names[k]},
                      {"precision", c.per_class[k].precision},
                      {"recall", c.per_class[k].recall},
                      {"f1", c.per_class[k].f1},
                      {"support", c.support[k]}});
    }
    j["per_class"] = std::move(rows);
  }
  if (!c.confusion.empty()) j["confusion_matrix"] = c.confusion;
  return j;
}

// One line of the per-class table.
std::string table_row(const std::string& label, size_t width, const ClassScores& s, int64_t support) {
  return fmt::format("{:<{}}  {:>9.4f}  {:>6.4f}  {:>6.4f}  {:>7}\n", label, width, s.precision, s.recall, s.f1,
                     support);
}

std::string classification_text(const OutputReport& r, const std::string& json_path) {
  const ClassificationReport& c = r.classification;
  std::string out;
  if (c.per_class.empty()) {
    out += fmt::format("{} classes: no per-class table (more than {}); accuracy {:.4f}\n", c.num_classes,
                       kReportMaxClasses, c.accuracy);
  } else {
    std::vector<size_t> shown(c.per_class.size());
    std::iota(shown.begin(), shown.end(), 0);
    if (shown.size() > kTableMaxClasses) {
      std::stable_sort(shown.begin(), shown.end(),
                       [&](size_t a, size_t b) { return c.per_class[a].recall < c.per_class[b].recall; });
      shown.resize(kTableWorstClasses);
      out += fmt::format("the {} classes of lowest recall of {} (every class in {}):\n", kTableWorstClasses,
                         c.num_classes, json_path);
    }
    size_t width = std::string("weighted avg").size();
    for (size_t k : shown) width = std::max(width, c.class_names[k].size());
    out += fmt::format("{:<{}}  {:>9}  {:>6}  {:>6}  {:>7}\n", "class", width, "precision", "recall", "f1", "support");
    for (size_t k : shown) out += table_row(c.class_names[k], width, c.per_class[k], c.support[k]);
    out += table_row("macro avg", width, c.macro, c.decisions);
    out += table_row("micro avg", width, c.micro, c.decisions);
    out += table_row("weighted avg", width, c.weighted, c.decisions);
    out += fmt::format("{:<{}}  {:>9}  {:>6}  {:>6.4f}  {:>7}\n", "accuracy", width, "", "", c.accuracy, c.decisions);
  }
  if (c.top_k_accuracy) {
    out += fmt::format("top-{} accuracy {:.4f} ({} classes)\n", kReportTopK, *c.top_k_accuracy, c.num_classes);
  }
  if (c.binary) {
    out += c.roc_auc ? fmt::format("roc auc {:.4f}\n", *c.roc_auc)
                     : std::string("roc auc: undefined (the evaluated set holds one class only)\n");
  }
  if (c.confusion.empty()) return out;
  if (c.confusion.size() > kTableMaxClasses) {
    out += fmt::format("confusion matrix: {0} x {0}, in {1} and as an image in TensorBoard (eval, Images)\n",
                       c.num_classes, json_path);
    return out;
  }
  out += "confusion matrix (rows: true class, columns: predicted class):\n";
  size_t name_width = 0, cell = 1;
  for (size_t k = 0; k < c.confusion.size(); ++k) {
    name_width = std::max(name_width, c.class_names[k].size());
    cell = std::max(cell, c.class_names[k].size());
    for (int64_t n : c.confusion[k]) cell = std::max(cell, std::to_string(n).size());
  }
  out += fmt::format("{:<{}}", "", name_width);
  for (const std::string& name : c.class_names) out += fmt::format("  {:>{}}", name, cell);
  out += "\n";
  for (size_t t = 0; t < c.confusion.size(); ++t) {
    out += fmt::format("{:<{}}", c.class_names[t], name_width);
    for (int64_t n : c.confusion[t]) out += fmt::format("  {:>{}}", n, cell);
    out += "\n";
  }
  return out;
}

}  // namespace

nlohmann::json report_json(const std::vector<OutputReport>& reports) {
  nlohmann::json outputs = nlohmann::json::array();
  for (const OutputReport& r : reports) outputs.push_back(output_json(r));
  return {{"outputs", std::move(outputs)}};
}

std::string report_text(const std::vector<OutputReport>& reports, const std::string& json_path) {
  std::string out;
  for (const OutputReport& r : reports) {
    if (!r.output.empty()) out += fmt::format("output {} ({}):\n", r.output, r.loss);
    if (r.kind == "regression") {
      out += fmt::format("mae {:.6f}  rmse {:.6f}  r2 {:.6f}  ({} values)\n", r.regression.mae, r.regression.rmse,
                         r.regression.r2, r.regression.values);
    } else if (r.kind == "classification") {
      out += classification_text(r, json_path);
    }
    if (!r.note.empty()) out += fmt::format("({})\n", r.note);
  }
  return out;
}

Status write_confusion_images(SummaryWriter& writer, int64_t step, const std::vector<OutputReport>& reports) {
  for (const OutputReport& r : reports) {
    if (r.kind != "classification" || r.classification.confusion.empty()) continue;
    const Image8 image = confusion_heat_map(r.classification.confusion);
    auto png = encode_png(image);
    if (!png) return png.error();
    const std::string tag = r.output.empty() ? "confusion_matrix" : r.output + "_confusion_matrix";
    if (Status s = writer.image(tag, step, image.height, image.width, image.channels, *png); !s) return s;
  }
  return Status::Ok();
}

}  // namespace dtrain
