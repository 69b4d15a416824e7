// Writes a model's inference graph with its variable values as an ONNX model
// (ONNX's own messages, checked by onnx::checker before it is written).
// The exported model takes the arrays `dtrain predict` takes: the same
// inputs in the same layout (NHWC images, int32 token ids), a dynamic batch
// dimension, and gives what predict writes (softmax or sigmoid
// probabilities, or raw values): output "predictions", or with several
// model outputs "predictions_<layer>" for each.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "engine/model/model.hpp"
#include "engine/base/status.hpp"

namespace dtrain {

// What predict applies to the model output (the loss's predictions()).
enum class PredictionHead { kIdentity, kSoftmax, kSigmoid };

struct OnnxExportOptions {
  // One per model output, in Model::outputs() order (predict's per-output
  // heads). REQUIRES: heads.size() == model.num_outputs().
  std::vector<PredictionHead> heads{PredictionHead::kIdentity};
  // The evaluation's scale (estimator/inference_view.hpp): predict multiplies
  // float32 features by it first.
  double input_scale = 1.0;
  // Then its normalize, (x - mean) / std over the last dimension (1 or C
  // values each), on the first input; empty: none.
  std::vector<float> input_mean, input_std;
  int64_t global_step = 0;   // the checkpoint's step, kept as the model version
  std::string doc;           // the job and checkpoint it came from (doc_string)
};

// Builds the ONNX model and writes it to `path` (through a temporary name, so
// an existing file is replaced only by a complete, checked model).
// values: host float32 tensors indexed like model.variables().
// Errors: kConfig naming the first layer that has no ONNX export (its
// file:line:col); kRuntime when the file cannot be written or onnx::checker
// rejects the model (our bug: the message says so).
Status write_onnx(const Model& model, std::span<const Tensor> values, const OnnxExportOptions& options,
                  const std::string& path);

// The ONNX opset the exporter writes (LayerNormalization needs 17).
constexpr int64_t kOnnxOpset = 17;

}  // namespace dtrain
