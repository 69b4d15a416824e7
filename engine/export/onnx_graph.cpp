// GraphBuilder: nodes, initializers and graph inputs/outputs written into
// ONNX's GraphProto message.
#include "engine/export/onnx_graph.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

namespace dtrain::onnx_export {

std::string GraphBuilder::fresh(const std::string& hint) {
  std::string name = hint;
  for (int n = 1; std::find(used_.begin(), used_.end(), name) != used_.end(); ++n) name = fmt::format("{}_{}", hint, n);
  used_.push_back(name);
  return name;
}

std::string GraphBuilder::node(const std::string& op, const std::vector<std::string>& inputs, const std::string& hint,
                               const std::vector<Attr>& attrs) {
  const std::string out = fresh(hint);
  node_to(op, inputs, out, attrs);
  return out;
}

void GraphBuilder::node_to(const std::string& op, const std::vector<std::string>& inputs, const std::string& out,
                           const std::vector<Attr>& attrs) {
  onnx::NodeProto* n = graph_.add_node();
  n->set_op_type(op);
  n->set_name(out);
  for (const std::string& in : inputs) n->add_input(in);
  n->add_output(out);
  for (const Attr& a : attrs) {
    onnx::AttributeProto* p = n->add_attribute();
    p->set_name(a.name);
    switch (a.kind) {
      case Attr::kInt:
        p->set_type(onnx::AttributeProto::INT);
        p->set_i(a.i);
        break;
      case Attr::kFloat:
        p->set_type(onnx::AttributeProto::FLOAT);
        p->set_f(a.f);
        break;
      case Attr::kInts:
        p->set_type(onnx::AttributeProto::INTS);
        for (int64_t v : a.ints) p->add_ints(v);
        break;
    }
  }
}

std::string GraphBuilder::floats(const std::string& hint, const Shape& shape, const std::vector<float>& values) {
  const std::string name = fresh(hint);
  onnx::TensorProto* t = graph_.add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : shape) t->add_dims(d);
  // Little-endian raw bytes, as the format stores them.
  t->set_raw_data(std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float)));
  return name;
}

std::string GraphBuilder::tensor(const std::string& hint, const Tensor& t) { return tensor(hint, t, t.shape()); }

std::string GraphBuilder::tensor(const std::string& hint, const Tensor& t, const Shape& shape) {
  const float* p = t.data();
  return floats(hint, shape, std::vector<float>(p, p + t.numel()));
}

std::string GraphBuilder::int64s(const std::string& hint, const std::vector<int64_t>& values) {
  const std::string name = fresh(hint);
  onnx::TensorProto* t = graph_.add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::INT64);
  t->add_dims(static_cast<int64_t>(values.size()));
  for (int64_t v : values) t->add_int64_data(v);
  return name;
}

void GraphBuilder::value_info(onnx::ValueInfoProto* v, const std::string& name, int32_t elem_type,
                              const Shape& per_example) {
  v->set_name(name);
  onnx::TypeProto_Tensor* tt = v->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(elem_type);
  onnx::TensorShapeProto* shape = tt->mutable_shape();
  shape->add_dim()->set_dim_param("N");
  for (int64_t d : per_example) shape->add_dim()->set_dim_value(d);
}

void GraphBuilder::input(const std::string& name, int32_t elem_type, const Shape& per_example) {
  used_.push_back(name);
  value_info(graph_.add_input(), name, elem_type, per_example);
}

void GraphBuilder::output(const std::string& name, int32_t elem_type, const Shape& per_example) {
  value_info(graph_.add_output(), name, elem_type, per_example);
}

}  // namespace dtrain::onnx_export
