// The vocabulary of text data, kept with the model: built from data.train's
// files, saved as model_dir/vocab.json by the chief's first training run, and
// from then on (once a checkpoint exists) checked (training) or read
// (evaluation) so token ids never change under a model.
#include <fmt/format.h>

#include <filesystem>

#include "datasets/source.hpp"
#include "datasets/text_source.hpp"
#include "estimator/estimator.hpp"

namespace dtrain {

namespace fs = std::filesystem;

namespace {

bool is_text(const std::optional<DataSourceSpec>& spec) { return spec && spec->format == "text"; }

std::string prefix(const DataSourceSpec& spec, const char* role) {
  return (spec.where.empty() ? "" : spec.where + ": ") + "data." + role + ": ";
}

}  // namespace

std::string vocabulary_path(const JobSpec& job) { return (fs::path(job.run.model_dir) / "vocab.json").string(); }

Status Estimator::prepare_training_vocabulary(bool chief) {
  if (!is_text(job_.data.train)) return Status::Ok();
  const DataSourceSpec& spec = *job_.data.train;
  auto built = build_text_vocabulary(spec, SourceContext{job_.base_dir, prefix(spec, "train")});
  if (!built) return built.error();
  vocabulary_ = *built;
  // Only the chief reads and writes model_dir; the other workers build the
  // same vocabulary from the same files. A file without a checkpoint beside
  // it is of a first run that failed: it binds nothing and is overwritten.
  const std::string path = vocabulary_path(job_);
  std::error_code ec;
  const bool saved_exists = chief && latest_checkpoint(job_.run.model_dir) && fs::exists(path, ec);
  if (saved_exists) {
    auto saved = read_vocabulary_file(path);
    if (!saved) return saved.error();
    const std::string diff = vocabulary_difference(*saved, path, **built, "data.train's files");
    if (!diff.empty()) {
      return config_error(fmt::format(
          "{}the vocabulary saved with the model does not match this job's text ({}), so token ids would change; "
          "train in a new run.model_dir (or --model-dir), or use the files and unit it was built from ({}: {})",
          prefix(spec, "train"), diff, text_unit_name(saved->unit()), fmt::join(saved->files(), ", ")));
    }
    vocabulary_ = std::make_shared<const TextVocabulary>(std::move(*saved));
  }
  if (Status s = check_vocabulary_fits_model(spec, "train"); !s) return s;
  if (Status s = check_vocabulary_units(); !s) return s;
  if (chief && !saved_exists) {
    if (Status s = write_vocabulary_file(path, **built); !s) return s;
    log_.info(fmt::format("wrote the vocabulary of data.train to {}: {} ids ({} {} + <unk>)", path, (*built)->size(),
                          (*built)->symbols().size(), text_unit_plural((*built)->unit())));
  }
  return Status::Ok();
}

Result<VocabularyPtr> Estimator::evaluation_vocabulary() {
  if (vocabulary_) return vocabulary_;
  const DataSourceSpec& spec = *job_.data.eval;
  const std::string path = vocabulary_path(job_);
  std::error_code ec;
  if (fs::exists(path, ec)) {
    auto saved = read_vocabulary_file(path);
    if (!saved) return saved.error();
    vocabulary_ = std::make_shared<const TextVocabulary>(std::move(*saved));
  } else if (is_text(job_.data.train)) {
    auto built = build_text_vocabulary(*job_.data.train, SourceContext{job_.base_dir, prefix(*job_.data.train, "train")});
    if (!built) return built.error();
    vocabulary_ = *built;
  } else {
    return config_error(fmt::format("{}format text needs the vocabulary the model was trained with: {} does not exist "
                                    "(dtrain train writes it) and data.train is not a text source to build it from",
                                    prefix(spec, "eval"), path));
  }
  if (Status s = check_vocabulary_units(); !s) return s.error();
  return vocabulary_;
}

Status Estimator::check_vocabulary_units() const {
  if (!vocabulary_ || !is_text(job_.data.eval)) return Status::Ok();
  const DataSourceSpec& spec = *job_.data.eval;
  if (parse_text_unit(spec.unit) == vocabulary_->unit()) return Status::Ok();
  return config_error(fmt::format("{}unit {} does not match the vocabulary of the model ({}), built with unit {}; "
                                  "evaluate with the unit of training",
                                  prefix(spec, "eval"), spec.unit, vocabulary_path(job_),
                                  text_unit_name(vocabulary_->unit())));
}

Status Estimator::check_vocabulary_fits_model(const DataSourceSpec& spec, const char* role) const {
  if (!vocabulary_ || spec.format != "text" || job_.model.loss != "sparse_softmax_cross_entropy") return Status::Ok();
  const Shape& out = program_.model->output_shape();
  const int64_t classes = out.empty() ? 1 : out.back();
  if (classes >= vocabulary_->size()) return Status::Ok();
  return config_error(fmt::format("{}the vocabulary has {} ids ({} {} + <unk>) but the model output {} has {} classes; "
                                  "give the last layer {} units",
                                  prefix(spec, role), vocabulary_->size(), vocabulary_->symbols().size(),
                                  text_unit_plural(vocabulary_->unit()), shape_str(out), classes, vocabulary_->size()));
}

}  // namespace dtrain
