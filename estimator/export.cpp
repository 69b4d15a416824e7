// Export of the inference graph (`dtrain export`, and the job's export:
// section during train_and_evaluate): the model, a checkpoint's values, the
// head predict applies, written by engine/export/.
#include <fmt/format.h>

#include "engine/export/onnx_export.hpp"
#include "engine/losses/loss_kind.hpp"
#include "estimator/estimator.hpp"

namespace dtrain {

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

}  // namespace

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
  o.input_scale = job_.data.predict ? job_.data.predict->scale : 1.0;
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
  if (Status s = export_checkpoint(*ckpt, path, out_path); !s) return s;
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
