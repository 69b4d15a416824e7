// What csv columns learn from data.train, kept with the model: fitted at the
// start of training (category vocabularies, mean/median fills, the label's
// class names), saved as model_dir/preprocessing.json by the chief, and used
// by every later read of the columns — evaluation, predict, a resumed run — so
// that the model always sees its features encoded as in training. A first
// run that fails before its first checkpoint leaves nothing that binds the
// next: the file is only read back when a checkpoint exists beside it.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "datasets/source.hpp"
#include "estimator/estimator.hpp"

namespace dtrain {

namespace fs = std::filesystem;

namespace {

bool is_csv(const std::optional<DataSourceSpec>& spec) { return spec && spec->format == "csv"; }

std::string prefix(const DataSourceSpec& spec, const char* role) {
  return (spec.where.empty() ? "" : spec.where + ": ") + "data." + role + ": ";
}

// Whether the columns of `spec` learn anything themselves (a category, a fill).
bool learns(const DataSourceSpec& spec) {
  return std::any_of(spec.columns.begin(), spec.columns.end(),
                     [](const CsvColumnSpec& c) { return c.type != "number" || !c.fill.empty(); });
}

}  // namespace

std::string preprocessing_path(const JobSpec& job) {
  return (fs::path(job.run.model_dir) / "preprocessing.json").string();
}

Result<TabularPtr> load_csv_preprocessing(const JobSpec& job, std::string* from) {
  const std::string path = preprocessing_path(job);
  std::error_code ec;
  if (latest_checkpoint(job.run.model_dir) && fs::exists(path, ec)) {
    auto saved = read_tabular_file(path);
    if (!saved) return saved.error();
    *from = path;
    return TabularPtr(std::make_shared<const TabularPreprocessing>(std::move(*saved)));
  }
  if (!is_csv(job.data.train)) return TabularPtr();
  auto fitted = fit_csv_source(*job.data.train, SourceContext{job.base_dir, prefix(*job.data.train, "train")});
  if (!fitted) return fitted.error();
  *from = "data.train's file";
  return TabularPtr(std::make_shared<const TabularPreprocessing>(std::move(*fitted)));
}

Status Estimator::prepare_training_tabular(bool chief) {
  if (!is_csv(job_.data.train)) return Status::Ok();
  const DataSourceSpec& spec = *job_.data.train;
  const std::string path = preprocessing_path(job_);
  std::error_code ec;
  // Resuming (a checkpoint exists): the columns stay as the checkpoint's
  // model learnt them, whatever the data holds now.
  if (chief && latest_checkpoint(job_.run.model_dir) && fs::exists(path, ec)) {
    auto saved = read_tabular_file(path);
    if (!saved) return saved.error();
    std::string diff = tabular_difference(*saved, spec.columns, spec.label_column, spec.classes, path);
    if (diff.empty()) diff = tabular_text_difference(*saved, spec, path);
    if (!diff.empty()) {
      return config_error(fmt::format("{}the columns saved with the model do not match this job's ({}), so the "
                                      "features would change; train in a new run.model_dir (or --model-dir), or give "
                                      "the columns as before",
                                      prefix(spec, "train"), diff));
    }
    tabular_ = std::make_shared<const TabularPreprocessing>(std::move(*saved));
    log_.info(fmt::format("data.train: columns read as saved with the model in {}", path));
    return Status::Ok();
  }
  log_.status("reading data.train's columns");
  auto fitted = fit_csv_source(spec, SourceContext{job_.base_dir, prefix(spec, "train")});
  log_.end_progress();
  if (!fitted) return fitted.error();
  if (!fitted->worth_saving()) {
    // Numbers only: nothing to keep; a file from an earlier run must not apply.
    if (chief && fs::exists(path, ec)) fs::remove(path, ec);
    return Status::Ok();
  }
  tabular_ = std::make_shared<const TabularPreprocessing>(std::move(*fitted));
  if (chief) {
    if (Status s = write_tabular_file(path, *tabular_); !s) return s;
    log_.info(fmt::format("data.train: saved what its columns learnt (vocabularies, fills, class names) to {}", path));
  }
  return Status::Ok();
}

Result<TabularPtr> Estimator::evaluation_tabular() {
  if (tabular_) return tabular_;
  const std::string path = preprocessing_path(job_);
  std::error_code ec;
  if (latest_checkpoint(job_.run.model_dir) && fs::exists(path, ec)) {
    auto saved = read_tabular_file(path);
    if (!saved) return saved.error();
    tabular_ = std::make_shared<const TabularPreprocessing>(std::move(*saved));
  } else if (is_csv(job_.data.train)) {
    auto fitted = fit_csv_source(*job_.data.train, SourceContext{job_.base_dir, prefix(*job_.data.train, "train")});
    if (!fitted) return fitted.error();
    if (fitted->worth_saving()) tabular_ = std::make_shared<const TabularPreprocessing>(std::move(*fitted));
  } else if (is_csv(job_.data.eval) && learns(*job_.data.eval)) {
    return config_error(fmt::format("{}category columns and fills are learnt from data.train, but {} does not exist "
                                    "(dtrain train writes it) and data.train is not a csv source to learn them from",
                                    prefix(*job_.data.eval, "eval"), path));
  }
  if (tabular_ && is_csv(job_.data.eval) && !job_.data.eval->columns.empty()) {
    const DataSourceSpec& eval = *job_.data.eval;
    const std::string diff = tabular_difference(*tabular_, eval.columns, tabular_->label_column, {}, "training");
    if (!diff.empty()) {
      return config_error(fmt::format("{}columns: the model was trained on other columns ({}); give data.eval the "
                                      "columns of data.train, or leave its columns out to use them",
                                      prefix(eval, "eval"), diff));
    }
  }
  return tabular_;
}

Result<SourcePtr> Estimator::read_predict_csv(const std::string& file, std::vector<std::string>& class_names) {
  const std::optional<DataSourceSpec>& train = job_.data.train;
  if (!is_csv(train)) {
    return config_error(fmt::format("--input {}: CSV rows are read as data.train reads its columns, but this job's "
                                    "data.train is not a csv source; give a .npy array of examples instead",
                                    file));
  }
  auto found = evaluation_tabular();
  if (!found) return found.error();
  TabularPtr tabular = *found;
  if (!tabular) {  // numbers only: the columns as data.train's file names them
    auto fitted = fit_csv_source(*train, SourceContext{job_.base_dir, prefix(*train, "train")});
    if (!fitted) return fitted.error();
    tabular = std::make_shared<const TabularPreprocessing>(std::move(*fitted));
  }
  DataSourceSpec spec = *train;
  spec.path = fs::absolute(file).string();
  spec.weight.clear();
  SourceContext ctx{job_.base_dir, "--input " + file + ": "};
  ctx.tabular = tabular;
  ctx.without_labels = true;
  if (program_.model->num_inputs() > 1) {
    for (const ModelInput& in : program_.model->inputs()) ctx.inputs.push_back(in.name);
  }
  auto source = load_csv_source(spec, ctx);
  if (!source) return source.error();
  class_names = tabular->classes;
  return source;
}

}  // namespace dtrain
