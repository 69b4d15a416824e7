// Export of the inference graph (`dtrain export`, and the job's export:
// section during train_and_evaluate): the model, a checkpoint's values, the
// head predict applies, written by engine/export/.
#include <fmt/format.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "datasets/source.hpp"
#include "datasets/text_folder_source.hpp"
#include "engine/export/onnx_export.hpp"
#include "engine/io/file_util.hpp"
#include "engine/losses/loss_kind.hpp"
#include "estimator/estimator.hpp"
#include "estimator/inference_view.hpp"

namespace dtrain {

namespace fs = std::filesystem;

namespace {

Result<PredictionHead> prediction_head(const std::string& loss) {
  auto kind = parse_loss_kind(loss);
  if (!kind) return kind.error();
  switch (*kind) {
    case LossKind::kSparseSoftmaxCrossEntropy:
    case LossKind::kSoftmaxCrossEntropy: return PredictionHead::kSoftmax;
    case LossKind::kSigmoidCrossEntropy: return PredictionHead::kSigmoid;
    case LossKind::kMeanSquaredError: return PredictionHead::kIdentity;
  }
  return config_error(fmt::format("model.loss: \"{}\" has no prediction head for export", loss));
}

// The export's path without its .onnx: files beside it start with it.
std::string export_stem(const std::string& onnx_path) {
  std::string stem = onnx_path;
  if (stem.size() > 5 && stem.compare(stem.size() - 5, 5, ".onnx") == 0) stem.resize(stem.size() - 5);
  return stem;
}

}  // namespace

Result<std::string> Estimator::write_export_preprocessing(const std::string& onnx_path) {
  nlohmann::ordered_json j;
  j["dtrain_export"] = 1;
  const InferenceView view = inference_view(job_);
  nlohmann::ordered_json in;
  in["scale"] = view.scale;
  if (!view.mean.empty()) in["normalize"] = {{"mean", view.mean}, {"std", view.std}};
  in["in_graph"] = view.map_is_normalize_only();
  j["input"] = in;
  bool worth = false;
  const std::optional<DataSourceSpec>& train = job_.data.train;
  if (train && train->format == "csv") {
    auto tabular = evaluation_tabular();
    if (!tabular) return tabular.error();
    if (*tabular) {  // the columns' encoding happens before the graph
      j["classes"] = (*tabular)->classes;
      j["csv"] = nlohmann::ordered_json::parse(tabular_json(**tabular));
      worth = true;
    }
  } else if (train && train->format == "image_folder") {
    auto source = load_source(*train, SourceContext{job_.base_dir, train->where + ": data.train: "});
    if (!source) return source.error();
    j["classes"] = (*source)->class_names();
    j["image"] = {{"size", train->image_size}, {"color_mode", train->color_mode}};
    worth = true;
  } else if (train && train->format == "text_folder") {
    auto names = text_folder_class_names(*train, SourceContext{job_.base_dir, train->where + ": data.train: "});
    if (!names) return names.error();
    auto v = text_folder_vocabulary();
    if (!v) return v.error();
    j["classes"] = *names;
    j["max_length"] = train->max_length;
    j["token_vocabulary"] = nlohmann::ordered_json::parse(token_vocabulary_json(**v));
    if ((*v)->tokenizer() == Tokenizer::kSentencePiece) {
      // The model beside the JSON, named as the JSON names it.
      const std::string model = export_stem(onnx_path) + "." + kSentencePieceModelFile;
      if (Status s = io::write_file_atomic(model, {(*v)->text_tokenizer().sentencepiece->bytes()}); !s) return s.error();
      j["token_vocabulary"]["sentencepiece_model"] = fs::path(model).filename().string();
    }
    worth = true;
  }
  if (vocabulary_ || (train && train->format == "text")) {
    if (!vocabulary_) {
      auto v = evaluation_vocabulary();
      if (!v) return v.error();
    }
    j["vocabulary"] = nlohmann::ordered_json::parse(vocabulary_json(*vocabulary_));
    worth = true;
  }
  if (!worth && view.scale == 1.0 && view.mean.empty()) return std::string();
  const std::string path = export_stem(onnx_path) + ".preprocessing.json";
  const std::string text = j.dump(1) + "\n";
  if (Status s = io::write_file_atomic(path, {text}); !s) return s.error();
  return path;
}

Status Estimator::export_checkpoint(const CheckpointData& ckpt, const std::string& checkpoint_path,
                                    const std::string& out_path) const {
  const Model& model = *program_.model;
  std::vector<Tensor> values;
  for (const VariableSpec& v : model.variables()) values.push_back(ckpt.find(v.name)->to_host());
  OnnxExportOptions o;
  o.heads.clear();
  for (const ProgramOutput& out : program_.outputs) {
    auto head = prediction_head(out.loss->name());
    if (!head) return head.error();
    o.heads.push_back(*head);
  }
  // The evaluation's numeric preprocessing is part of the graph: raw examples in.
  const InferenceView view = inference_view(job_);
  o.input_scale = view.scale;
  o.input_mean = view.mean;
  o.input_std = view.std;
  o.global_step = ckpt.global_step;
  o.doc = fmt::format("dtrain job {}, checkpoint {} (step {})", job_.source_path, checkpoint_path, ckpt.global_step);
  return write_onnx(model, values, o, out_path);
}

Status Estimator::export_model(const std::string& format, const std::string& out_path,
                               const std::optional<std::string>& checkpoint) {
  if (format != "onnx") return config_error(fmt::format("--format {}: expected onnx", format));
  auto found = checkpoint_or_latest(checkpoint);
  if (!found) return found.error();
  const std::string path = *found;
  auto ckpt = read_compatible_checkpoint(path);
  if (!ckpt) return ckpt.error();
  // The output's folder is made as needed, as model_dir is.
  if (const fs::path dir = fs::path(out_path).parent_path(); !dir.empty()) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) return config_error(fmt::format("--out {}: cannot create its folder {}: {}", out_path, dir.string(), ec.message()));
  }
  if (Status s = export_checkpoint(*ckpt, path, out_path); !s) return s;
  const InferenceView view = inference_view(job_);
  if (view.map_is_normalize_only()) {
    if (const std::string applied = describe_inference_view(view); !applied.empty()) {
      log_.info(fmt::format("the exported graph {}", applied));
    }
  } else {
    std::vector<std::string> ops;
    for (const MapOpSpec& op : view.map) ops.push_back(op.op);
    log_.warning(fmt::format("{}'s map ({}) is not in the exported graph, which holds the scale and a normalize alone: "
                             "give the exported model examples after those operations",
                             view.role, fmt::join(ops, ", ")));
  }
  if (auto beside = write_export_preprocessing(out_path); !beside) {
    return beside.error();
  } else if (!beside->empty()) {
    log_.info(fmt::format("wrote what the exported model's inputs and outputs mean to {}", *beside));
  }
  if (program_.mixed()) {
    log_.info(fmt::format("precision.compute is {}: the exported model computes in float32, so its outputs differ "
                          "from dtrain predict's by {} rounding",
                          job_.precision.compute, job_.precision.compute));
  }
  log_.info(fmt::format("exported the inference graph of {} (step {}) to {} (ONNX opset {})", path, ckpt->global_step,
                        out_path, kOnnxOpset));
  return Status::Ok();
}

}  // namespace dtrain
