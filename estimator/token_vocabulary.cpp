// The token vocabulary of text_folder data, kept with the model: built from
// data.train's training split, saved as model_dir/token_vocab.json by the
// chief, and read back by every later run that has a checkpoint (resume,
// evaluate, predict). A first run that fails before its first checkpoint
// leaves nothing that binds the next: its file is rebuilt and overwritten.
// Also `input_dim: auto`: the vocabulary's size, and dense `units: auto`:
// the class count (text_folder and image_folder class folders, the text
// source's vocabulary), resolved before the model is built.
#include <fmt/format.h>

#include <filesystem>

#include "datasets/image_folder_source.hpp"
#include "datasets/source.hpp"
#include "datasets/text_folder_source.hpp"
#include "datasets/text_source.hpp"
#include "datasets/token_ids.hpp"
#include "engine/io/file_util.hpp"
#include "engine/layers/dense.hpp"
#include "engine/layers/embedding.hpp"
#include "engine/layers/registry.hpp"
#include "estimator/estimator.hpp"

namespace dtrain {

namespace fs = std::filesystem;

namespace {

bool is_text_folder(const std::optional<DataSourceSpec>& spec) { return spec && spec->format == "text_folder"; }
bool is_text(const std::optional<DataSourceSpec>& spec) { return spec && spec->format == "text"; }
bool is_image_folder(const std::optional<DataSourceSpec>& spec) { return spec && spec->format == "image_folder"; }
bool is_csv(const std::optional<DataSourceSpec>& spec) { return spec && spec->format == "csv"; }

// The model input an embedding reads directly: its one `inputs:` entry when
// that names a model input, or the model's first input for the first layer
// without inputs:; "" when it reads another layer.
std::string input_read_by(const ModelSpec& model, const LayerSpec& l) {
  std::string name;
  if (l.inputs.empty()) {
    if (!model.layers.empty() && &model.layers.front() == &l) name = model.input_name;
  } else if (l.inputs.size() == 1) {
    name = l.inputs[0];
  }
  if (!name.empty() && name == model.input_name) return name;
  for (const ModelInputSpec& in : model.extra_inputs) {
    if (in.name == name) return name;
  }
  return "";
}

std::string prefix(const DataSourceSpec& spec, const char* role) {
  return (spec.where.empty() ? "" : spec.where + ": ") + "data." + role + ": ";
}

// A kConfig error when data.train's sentencepiece_model exists and is not the
// model saved with the checkpoint (`saved`, read from `path`): its pieces, and
// so the token ids, could differ. A job whose file is gone uses the saved copy.
Status check_same_sentencepiece_model(const JobSpec& job, const TokenVocabulary& saved, const std::string& path) {
  if (saved.tokenizer() != Tokenizer::kSentencePiece || !is_text_folder(job.data.train)) return Status::Ok();
  const std::string& file = job.data.train->sentencepiece_model;
  std::error_code ec;
  if (file.empty() || !fs::exists(file, ec)) return Status::Ok();
  auto bytes = io::read_whole_file(file, ErrorKind::kData);
  if (!bytes) return bytes.error();
  if (*bytes == saved.text_tokenizer().sentencepiece->bytes()) return Status::Ok();
  return config_error(fmt::format("{}sentencepiece_model {} is not the model saved with the checkpoint ({}), so token "
                                  "ids would change; train in a new run.model_dir (or --model-dir), or point "
                                  "sentencepiece_model at the saved copy",
                                  prefix(*job.data.train, "train"), file,
                                  (fs::path(path).parent_path() / kSentencePieceModelFile).string()));
}

}  // namespace

std::string token_vocabulary_path(const JobSpec& job) {
  return (fs::path(job.run.model_dir) / "token_vocab.json").string();
}

Result<TokenVocabularyPtr> load_text_folder_vocabulary(const JobSpec& job, bool* built) {
  const std::string path = token_vocabulary_path(job);
  std::error_code ec;
  if (latest_checkpoint(job.run.model_dir) && fs::exists(path, ec)) {
    auto saved = read_token_vocabulary_file(path);
    if (!saved) return saved.error();
    if (is_text_folder(job.data.train) && job.data.train->tokenizer != tokenizer_name(saved->tokenizer())) {
      return config_error(fmt::format("{}tokenizer {} does not match the vocabulary saved with the model ({}, "
                                      "tokenizer {}), so token ids would change; train in a new run.model_dir (or "
                                      "--model-dir), or use tokenizer {}",
                                      prefix(*job.data.train, "train"), job.data.train->tokenizer, path,
                                      tokenizer_name(saved->tokenizer()), tokenizer_name(saved->tokenizer())));
    }
    if (Status s = check_same_sentencepiece_model(job, *saved, path); !s) return s.error();
    *built = false;
    return TokenVocabularyPtr(std::make_shared<const TokenVocabulary>(std::move(*saved)));
  }
  if (!is_text_folder(job.data.train)) {
    const std::optional<DataSourceSpec>& other = job.data.eval ? job.data.eval : job.data.predict;
    return config_error(fmt::format("{}format text_folder needs the vocabulary the model was trained with: {} does not "
                                    "exist beside a checkpoint (dtrain train writes it) and data.train is not a "
                                    "text_folder to build it from",
                                    other ? prefix(*other, job.data.eval ? "eval" : "predict") : std::string(), path));
  }
  const DataSourceSpec& spec = *job.data.train;
  auto v = build_text_folder_vocabulary(spec, SourceContext{job.base_dir, prefix(spec, "train")});
  if (!v) return v.error();
  *built = true;
  return *v;
}

Result<std::string> resolve_auto_vocabulary_sizes(JobSpec& job, TokenVocabularyPtr* tokens, bool* tokens_built) {
  std::vector<LayerSpec*> embeddings, denses;
  for (LayerSpec& l : job.model.layers) {
    if (l.type == "embedding" && layer_options<EmbeddingSpec>(l).input_dim == 0) embeddings.push_back(&l);
    if (l.type == "dense" && layer_options<DenseSpec>(l).units == 0) denses.push_back(&l);
  }
  if (embeddings.empty() && denses.empty()) return std::string();
  int64_t size = 0, classes = 0;
  std::string from, classes_from;
  // The first text_folder (and image_folder) of data.train, eval, predict.
  const std::optional<DataSourceSpec>*folder = nullptr, *images = nullptr;
  for (const std::optional<DataSourceSpec>* d : {&job.data.train, &job.data.eval, &job.data.predict}) {
    if (folder == nullptr && is_text_folder(*d)) folder = d;
    if (images == nullptr && is_image_folder(*d)) images = d;
  }
  auto role_of = [&](const std::optional<DataSourceSpec>* d) {
    return d == &job.data.train ? "train" : d == &job.data.eval ? "eval" : "predict";
  };
  // units: auto of a class-folder format: the count of `names` (its classes), or its error.
  auto class_folders = [&](const std::optional<DataSourceSpec>* d, const auto& names) -> Status {
    const char* role = role_of(d);
    auto listed = names(**d, SourceContext{job.base_dir, prefix(**d, role)});
    if (!listed) return listed.error();
    classes = static_cast<int64_t>(listed->size());
    classes_from = fmt::format("the class folders of data.{}", role);
    return Status::Ok();
  };
  if (folder != nullptr) {
    if (!embeddings.empty()) {
      bool built = false;
      auto v = load_text_folder_vocabulary(job, &built);
      if (!v) return v.error();
      if (tokens != nullptr) *tokens = *v;
      if (tokens_built != nullptr) *tokens_built = built;
      size = (*v)->size();
      from = built ? "data.train's training split" : token_vocabulary_path(job);
    }
    if (!denses.empty()) {
      if (Status s = class_folders(folder, text_folder_class_names); !s) return s.error();
    }
  } else if (is_csv(job.data.train) || is_csv(job.data.eval) || is_csv(job.data.predict)) {
    std::string csv_from;
    auto pre = load_csv_preprocessing(job, &csv_from);
    if (!pre) return pre.error();
    if (*pre) {
      // Per embedding: the ids of the columns of the model input it reads.
      std::string line;
      for (LayerSpec* l : embeddings) {
        const std::string input = input_read_by(job.model, *l);
        if (input.empty()) continue;
        const int64_t n = (*pre)->id_count(job.model.extra_inputs.empty() ? std::string() : input);
        if (n == 0) continue;
        layer_options<EmbeddingSpec>(*l).input_dim = n;
        line += fmt::format("{}model: {} input_dim: auto = {} (the ids of the csv columns of {}, {})",
                            line.empty() ? "" : "\n", l->name.empty() ? l->type : l->name, n,
                            job.model.extra_inputs.empty() ? "the model's input" : "model input " + input, csv_from);
      }
      if (!(*pre)->classes.empty()) {
        classes = static_cast<int64_t>((*pre)->classes.size());
        classes_from = "the label's class names in " + csv_from;
      }
      embeddings.clear();  // resolved above, or left for make_embedding to report
      for (LayerSpec* l : classes > 0 ? denses : std::vector<LayerSpec*>{}) {
        layer_options<DenseSpec>(*l).units = classes;
        line += fmt::format("{}model: {} units: auto = {} ({})", line.empty() ? "" : "\n",
                            l->name.empty() ? l->type : l->name, classes, classes_from);
      }
      return line;
    }
  } else if (is_text(job.data.train) || is_text(job.data.eval)) {
    const std::string path = vocabulary_path(job);
    std::error_code ec;
    if (fs::exists(path, ec) && (latest_checkpoint(job.run.model_dir) || !is_text(job.data.train))) {
      auto saved = read_vocabulary_file(path);
      if (!saved) return saved.error();
      size = saved->size();
      from = path;
    } else if (is_text(job.data.train)) {
      auto built = build_text_vocabulary(*job.data.train, SourceContext{job.base_dir, prefix(*job.data.train, "train")});
      if (!built) return built.error();
      size = (*built)->size();
      from = "data.train's files";
    }
    classes = size;  // the labels are next-token ids
    classes_from = "the vocabulary of " + from;
  } else if (images != nullptr && !denses.empty()) {
    if (Status s = class_folders(images, image_folder_class_names); !s) return s.error();
  }
  std::string line;
  auto say = [&](const LayerSpec& l, const char* key, int64_t n, const std::string& what) {
    line += fmt::format("{}model: {} {}: auto = {} ({})", line.empty() ? "" : "\n", l.name.empty() ? l.type : l.name,
                        key, n, what);
  };
  // Left at 0 where nothing was found: make_embedding and make_dense say what is missing.
  for (LayerSpec* l : size > 0 ? embeddings : std::vector<LayerSpec*>{}) {
    layer_options<EmbeddingSpec>(*l).input_dim = size;
    say(*l, "input_dim", size, "the vocabulary of " + from);
  }
  for (LayerSpec* l : classes > 0 ? denses : std::vector<LayerSpec*>{}) {
    layer_options<DenseSpec>(*l).units = classes;
    say(*l, "units", classes, classes_from);
  }
  return line;
}

Result<TokenVocabularyPtr> Estimator::text_folder_vocabulary() {
  if (token_vocab_) return token_vocab_;
  log_.status("reading the text of data.train for its vocabulary");
  auto v = load_text_folder_vocabulary(job_, &token_vocab_built_);
  log_.end_progress();
  if (!v) return v.error();
  token_vocab_ = *v;
  return token_vocab_;
}

Status Estimator::prepare_training_token_vocabulary(bool chief) {
  if (!is_text_folder(job_.data.train)) return Status::Ok();
  auto v = text_folder_vocabulary();
  if (!v) return v.error();
  const std::string path = token_vocabulary_path(job_);
  if (!token_vocab_built_) {
    log_.info(fmt::format("data.train: the vocabulary saved with the model in {}: {} ids", path, (*v)->size()));
    return Status::Ok();
  }
  if (!chief) return Status::Ok();
  if (Status s = write_token_vocabulary_file(path, **v); !s) return s;
  log_.info(fmt::format("wrote the vocabulary of data.train to {}: {} ids (<pad>, <unk> + {} {} tokens)", path,
                        (*v)->size(), (*v)->tokens().size(), tokenizer_name((*v)->tokenizer())));
  return Status::Ok();
}

Status Estimator::attach_token_vocabulary(const DataSourceSpec& spec, InputOptions& options) {
  if (spec.format != "text_folder") return Status::Ok();
  auto v = text_folder_vocabulary();
  if (!v) return v.error();
  options.tokens = *v;
  return Status::Ok();
}

Status Estimator::resolve_auto_vocabulary_sizes() {
  auto line = dtrain::resolve_auto_vocabulary_sizes(job_, &token_vocab_, &token_vocab_built_);
  if (!line) return line.error();
  if (!line->empty()) log_.info(*line);
  return Status::Ok();
}

Result<Tensor> Estimator::read_predict_texts(const std::vector<std::string>& files,
                                             std::vector<std::string>& class_names) {
  const std::optional<DataSourceSpec>& train = job_.data.train;
  if (!is_text_folder(train)) {
    return config_error("--input: .txt files are read as data.train reads its text, but this job's data.train is not "
                        "a text_folder; give a .npy array of examples instead");
  }
  auto v = text_folder_vocabulary();
  if (!v) return v.error();
  const int64_t length = train->max_length;
  if (program_.model->num_inputs() != 1 || program_.model->input_shape() != Shape{length}) {
    return config_error(fmt::format("--input: data.train's examples are [{}] token ids but the model reads {}", length,
                                    shape_str(program_.model->input_shape())));
  }
  // The class names, as training numbered the folders.
  if (auto names = text_folder_class_names(*train, SourceContext{job_.base_dir, prefix(*train, "train")})) {
    class_names = std::move(*names);
  }
  const TextTokenizer& tokenizer = (*v)->text_tokenizer();
  const auto n = static_cast<int64_t>(files.size());
  Tensor x = token_tensor({n, length});
  for (int64_t i = 0; i < n; ++i) {
    auto tokens = read_text_file_tokens(files[static_cast<size_t>(i)], tokenizer);
    if (!tokens) return tokens.error();
    const std::vector<int32_t> ids = token_ids(**v, *tokens, length);
    put_tokens(x, i * length, ids.data(), length);
  }
  return x;
}

}  // namespace dtrain
