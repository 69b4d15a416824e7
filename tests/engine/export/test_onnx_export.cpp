// engine/export: every layer type has an ONNX exporter, and write_onnx writes
// a model that ONNX's own parser reads back with the graph and values given.
#include <doctest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "engine/export/onnx_export.hpp"
#include "engine/export/onnx_layers.hpp"
#include "engine/layers/registry.hpp"
#include "../model/model_test_util.hpp"
#include "onnx/onnx_pb.h"

namespace dtrain {

TEST_CASE("onnx export: every registered layer type has an exporter") {
  for (const std::string& type : layer_types()) {
    CAPTURE(type);
    CHECK(static_cast<bool>(onnx_export::find_layer_exporter(type)));
  }
  CHECK(static_cast<bool>(onnx_export::find_layer_exporter("activation")));  // what a layer's activation: adds
  CHECK_FALSE(static_cast<bool>(onnx_export::find_layer_exporter("no_such_layer")));
}

TEST_CASE("onnx export: a dense model's graph, initializers and prediction head") {
  auto model = model_testing::model_of(R"(
model:
  input: {shape: [3]}
  layers:
    - {name: hidden, type: dense, units: 2, activation: relu}
    - {type: dropout, rate: 0.5}
    - {name: out, type: dense, units: 2, use_bias: false}
)", "job.yaml");
  REQUIRE(model.ok());
  std::vector<Tensor> values{Tensor::from({3, 2}, {1, 2, 3, 4, 5, 6}), Tensor::from({2}, {0.5f, -0.5f}),
                             Tensor::from({2, 2}, {1, 0, 0, 1})};
  OnnxExportOptions o;
  o.heads = {PredictionHead::kSigmoid};
  o.input_scale = 0.5;
  o.global_step = 12;
  const std::string path = (std::filesystem::temp_directory_path() / "dtrain_test_export.onnx").string();
  REQUIRE(write_onnx(**model, values, o, path).ok());

  std::ifstream f(path, std::ios::binary);
  std::stringstream bytes;
  bytes << f.rdbuf();
  onnx::ModelProto proto;
  REQUIRE(proto.ParseFromString(bytes.str()));
  std::filesystem::remove(path);
  CHECK(proto.model_version() == 12);
  CHECK(proto.opset_import(0).version() == kOnnxOpset);
  std::vector<std::string> ops;
  for (const auto& n : proto.graph().node()) ops.push_back(n.op_type());
  // The input scale, dense + bias + relu, no dropout, dense without bias, the head.
  CHECK(ops == std::vector<std::string>{"Mul", "MatMul", "Add", "Relu", "MatMul", "Sigmoid"});
  REQUIRE(proto.graph().input_size() == 1);
  CHECK(proto.graph().input(0).name() == "input");
  CHECK(proto.graph().input(0).type().tensor_type().shape().dim(0).dim_param() == "N");
  CHECK(proto.graph().output(0).name() == "predictions");
  const onnx::TensorProto& kernel = proto.graph().initializer(1);  // after the scale
  CHECK(kernel.name() == "hidden/kernel");
  REQUIRE(kernel.raw_data().size() == 6 * sizeof(float));
  float k[6];
  std::memcpy(k, kernel.raw_data().data(), sizeof(k));
  CHECK(k[5] == 6.0f);

  // An unwritable place is an error, not a crash.
  auto bad = write_onnx(**model, values, o, "/nonexistent/dir/m.onnx");
  CHECK(!bad.ok());
}

}  // namespace dtrain
