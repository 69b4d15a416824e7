// A small builder over ONNX's own GraphProto (Debian's libonnx-dev): fresh
// value names, nodes with attributes, float and int64 initializers. The layer
// exporters (onnx_layers.cpp) write the inference graph through it.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "onnx/onnx_pb.h"

#include "engine/tensor.hpp"

namespace dtrain::onnx_export {

// One attribute of a node: an int, a float or a list of ints.
struct Attr {
  std::string name;
  enum Kind { kInt, kFloat, kInts } kind;
  int64_t i = 0;
  float f = 0;
  std::vector<int64_t> ints;
  static Attr Int(std::string n, int64_t v) { return {std::move(n), kInt, v, 0, {}}; }
  static Attr Float(std::string n, float v) { return {std::move(n), kFloat, 0, v, {}}; }
  static Attr Ints(std::string n, std::vector<int64_t> v) { return {std::move(n), kInts, 0, 0, std::move(v)}; }
};

// Not thread-safe; one per export. Every value name it hands out is unique
// within the graph.
class GraphBuilder {
 public:
  explicit GraphBuilder(onnx::GraphProto& graph) : graph_(graph) {}

  // A new value name "<hint>" or "<hint>_<n>" not used before.
  std::string fresh(const std::string& hint);
  // Adds a node `op` reading `inputs` and returns its one output's name
  // (fresh from `hint`). The node itself is named after that output.
  std::string node(const std::string& op, const std::vector<std::string>& inputs, const std::string& hint,
                   const std::vector<Attr>& attrs = {});
  // The same, writing the value `output` (a name fresh() handed out and no node wrote yet).
  void node_to(const std::string& op, const std::vector<std::string>& inputs, const std::string& output,
               const std::vector<Attr>& attrs = {});
  // A float32 initializer of `shape` holding `values` (row-major); returns its name.
  std::string floats(const std::string& hint, const Shape& shape, const std::vector<float>& values);
  // The float32 tensor `t` (host, float32) as an initializer, optionally re-viewed as `shape`.
  std::string tensor(const std::string& hint, const Tensor& t);
  std::string tensor(const std::string& hint, const Tensor& t, const Shape& shape);
  // A 1-D int64 initializer (shapes, axes, pads); returns its name.
  std::string int64s(const std::string& hint, const std::vector<int64_t>& values);
  // Declares a graph input or output: float32 or int32, dims with a leading
  // dynamic batch dimension "N" followed by `per_example`.
  void input(const std::string& name, int32_t elem_type, const Shape& per_example);
  void output(const std::string& name, int32_t elem_type, const Shape& per_example);

 private:
  void value_info(onnx::ValueInfoProto* v, const std::string& name, int32_t elem_type, const Shape& per_example);
  onnx::GraphProto& graph_;
  std::vector<std::string> used_;
};

}  // namespace dtrain::onnx_export
