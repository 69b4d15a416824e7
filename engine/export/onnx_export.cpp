// write_onnx: the model's inputs, one exporter call per layer in graph order
// (onnx_layers.hpp's table), the prediction head, onnx::checker, the file.
#include "engine/export/onnx_export.hpp"

#include <fmt/format.h>

#include <cassert>

#include "engine/export/onnx_graph.hpp"
#include "engine/export/onnx_layers.hpp"
#include "engine/io/file_util.hpp"
#include "engine/version.hpp"
#include "onnx/checker.h"

namespace dtrain {

namespace {

using onnx_export::GraphBuilder;

int32_t onnx_type(DType t) { return t == DType::i32 ? onnx::TensorProto::INT32 : onnx::TensorProto::FLOAT; }

// The graph's output values and shapes, one per model output (model.outputs,
// or the last layer), in the model's output order; value is indexed by layer.
std::vector<std::pair<std::string, Shape>> model_outputs(const Model& model, const std::vector<std::string>& value) {
  std::vector<std::pair<std::string, Shape>> out;
  for (const ModelOutput& o : model.outputs()) out.emplace_back(value[o.entry], o.shape);
  return out;
}

Status build_graph(const Model& model, std::span<const Tensor> values, const OnnxExportOptions& o,
                   onnx::GraphProto& graph) {
  GraphBuilder g(graph);
  graph.set_name("dtrain");
  // The outputs' names first, so that no layer (one named "predictions") takes them.
  // One output is "predictions"; several are "predictions_<layer>".
  const size_t num_outputs = model.num_outputs();
  assert(o.heads.size() == num_outputs);
  std::vector<std::string> output_names;
  for (const ModelOutput& out : model.outputs()) {
    output_names.push_back(g.fresh(num_outputs == 1 ? "predictions" : fmt::format("predictions_{}", out.name)));
  }
  // The model's inputs as predict takes them; float inputs scaled as predict does.
  std::vector<std::string> input_value;
  for (const ModelInput& in : model.inputs()) {
    g.input(in.name, onnx_type(in.dtype), in.shape);
    std::string v = in.name;
    if (in.dtype == DType::f32 && o.input_scale != 1.0) {
      v = g.node("Mul", {v, g.floats(in.name + "/scale", {}, {static_cast<float>(o.input_scale)})}, in.name + "/scaled");
    }
    if (in.dtype == DType::f32 && !o.input_mean.empty() && input_value.empty()) {
      const Shape mshape{static_cast<int64_t>(o.input_mean.size())}, sshape{static_cast<int64_t>(o.input_std.size())};
      v = g.node("Sub", {v, g.floats(in.name + "/mean", mshape, o.input_mean)}, in.name + "/centred");
      v = g.node("Div", {v, g.floats(in.name + "/std", sshape, o.input_std)}, in.name + "/normalized");
    }
    input_value.push_back(v);
  }
  std::vector<std::string> value(model.num_layers());
  for (size_t i = 0; i < model.num_layers(); ++i) {
    const Model::LayerView view = model.layer_view(i);
    const std::string type = view.layer.type();
    onnx_export::LayerExporter fn = onnx_export::find_layer_exporter(type);
    if (fn == nullptr) {
      return config_error(fmt::format("{}: layer \"{}\" of type {} has no ONNX export", view.place, view.name, type));
    }
    for (size_t k = 0; k < view.num_vars; ++k) {
      const Tensor& t = values[view.first_var + k];
      if (t.dtype() != DType::f32) {
        return config_error(fmt::format("{}: variable {} is {}; the ONNX export writes float32 variables",
                                        view.place, model.variables()[view.first_var + k].name, dtype_name(t.dtype())));
      }
    }
    onnx_export::LayerIO io{view, {}, {}, values.subspan(view.first_var, view.num_vars)};
    for (int in : view.inputs) {
      if (Model::is_model_input(in)) {
        const size_t k = Model::input_index(in);
        io.inputs.push_back(input_value[k]);
        io.in_shapes.push_back(model.inputs()[k].shape);
      } else {
        io.inputs.push_back(value[static_cast<size_t>(in)]);
        io.in_shapes.push_back(model.layer_view(static_cast<size_t>(in)).out_shape);
      }
    }
    auto out = fn(g, io);
    if (!out) return config_error(fmt::format("{}: ONNX export: {}", view.place, out.error().message));
    value[i] = *out;
  }
  if (model.num_layers() == 0) return config_error("the model has no layers to export");
  const auto outputs = model_outputs(model, value);
  for (size_t k = 0; k < outputs.size(); ++k) {
    const std::string& name = output_names[k];
    const std::string& v = outputs[k].first;
    switch (o.heads[k]) {
      case PredictionHead::kSoftmax: g.node_to("Softmax", {v}, name, {onnx_export::Attr::Int("axis", -1)}); break;
      case PredictionHead::kSigmoid: g.node_to("Sigmoid", {v}, name); break;
      case PredictionHead::kIdentity: g.node_to("Identity", {v}, name); break;
    }
    g.output(name, onnx::TensorProto::FLOAT, outputs[k].second);
  }
  return Status::Ok();
}

}  // namespace

Status write_onnx(const Model& model, std::span<const Tensor> values, const OnnxExportOptions& options,
                  const std::string& path) {
  if (values.size() != model.variables().size()) {
    return runtime_error(fmt::format("ONNX export: {} variable values for a model of {} variables", values.size(),
                                     model.variables().size()));
  }
  onnx::ModelProto proto;
  proto.set_ir_version(onnx::IR_VERSION);
  proto.set_producer_name("dtrain");
  proto.set_producer_version(kDtrainVersion);
  proto.set_model_version(options.global_step);
  proto.set_doc_string(options.doc);
  onnx::OperatorSetIdProto* opset = proto.add_opset_import();
  opset->set_domain("");
  opset->set_version(kOnnxOpset);
  if (Status s = build_graph(model, values, options, *proto.mutable_graph()); !s) return s;
  try {
    onnx::checker::check_model(proto);
  } catch (const std::exception& e) {
    return runtime_error(fmt::format("internal error: onnx::checker rejects the exported model (a bug in dtrain's "
                                     "exporter; please report it): {}",
                                     e.what()));
  }
  std::string bytes;
  if (!proto.SerializeToString(&bytes)) return runtime_error("ONNX export: cannot serialise the model");
  // Through a temporary name, fsynced and renamed: a model already there stays whole on failure.
  return io::write_file_atomic(path, {bytes});
}

}  // namespace dtrain
