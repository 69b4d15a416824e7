// Sequential model: builds layers from the job and runs forward/backward over
// one replica's state.
#include "engine/model/model.hpp"

#include <fmt/format.h>

#include <cassert>
#include <map>

#include "engine/layers/registry.hpp"
#include "engine/ops/support.hpp"
#include "engine/optim/initializers.hpp"

namespace dtrain {

Result<std::unique_ptr<Model>> Model::build(const ModelSpec& spec) {
  auto model = std::make_unique<Model>();
  model->input_shape_ = Shape(spec.input_shape.begin(), spec.input_shape.end());
  Shape shape = model->input_shape_;
  std::map<std::string, int> type_counts;
  for (size_t i = 0; i < spec.layers.size(); ++i) {
    const LayerSpec& ls = spec.layers[i];
    std::string name = ls.name;
    if (name.empty()) {
      const int n = type_counts[ls.type]++;
      name = n == 0 ? ls.type : fmt::format("{}_{}", ls.type, n);
    }
    const std::string where = ls.where.empty() ? "" : ls.where + ": ";
    auto place = [&](const std::string& msg) {
      return config_error(fmt::format("{}model.layers[{}] ({}): {}", where, i, ls.type, msg));
    };
    auto layer = make_layer(ls);
    if (!layer) return place(layer.error().message);
    const bool fused = !ls.activation.empty() && ls.type != "activation" && (*layer)->fuse_activation(ls.activation);
    auto out = (*layer)->build(shape);
    if (!out) return place(out.error().message);
    for (int64_t d : *out) {
      if (d <= 0) return place(fmt::format("output shape {} has an empty dimension", shape_str(*out)));
    }
    const std::string place_text = fmt::format("{}model.layers[{}] ({})", where, i, ls.type);
    Entry e{std::move(*layer), name, place_text, model->variables_.size(), 0, *out};
    for (ParamSpec& p : e.layer->params()) {
      if (Status s = check_initializer(p.init); !s) return place(p.name + ": " + s.error().message);
      model->variables_.push_back({name + "/" + p.name, p.shape, p.init, p.trainable});
      ++e.num_vars;
    }
    shape = *out;
    model->layers_.push_back(std::move(e));
    if (!ls.activation.empty() && ls.type != "activation" && !fused) {
      auto act = make_activation(ls.activation);
      if (!act) return place(act.error().message);
      auto act_out = (*act)->build(shape);
      if (!act_out) return place(act_out.error().message);
      model->layers_.push_back(
          {std::move(*act), name + "/" + ls.activation, place_text, model->variables_.size(), 0, *act_out});
    }
  }
  model->output_shape_ = shape;
  return model;
}

Status Model::check_support(const ops::Context& ctx) const {
  for (const Entry& e : layers_) {
    for (std::string_view op : e.layer->ops()) {
      if (!ops::supports(op, ctx)) {
        return config_error(fmt::format("{}: {} cannot run on {} in {}: {}", e.place, e.layer->type(),
                                        ctx.device.str(), dtype_name(ctx.compute), ops::why_unsupported(op, ctx)));
      }
    }
  }
  return Status::Ok();
}

Status Model::check_input(const Tensor& features) const {
  // Layers that run no op only re-view their input (reshape, flatten): the
  // layer after them still reads the data's values.
  for (const Entry& e : layers_) {
    if (Status s = e.layer->check_input(features); !s) {
      return data_error(fmt::format("layer {} ({}): {}", e.name, e.layer->type(), s.error().message));
    }
    if (!e.layer->ops().empty()) break;
  }
  return Status::Ok();
}

int64_t Model::num_parameters() const {
  int64_t n = 0;
  for (const VariableSpec& v : variables_) n += num_elements(v.shape);
  return n;
}

std::string Model::summary() const {
  std::string out = fmt::format("{:<24} {:<19} {:<18} {}\n", "layer", "type", "output", "params");
  out += fmt::format("{:<24} {:<19} {:<18} {}\n", "input", "", shape_str(input_shape_), 0);
  for (const Entry& e : layers_) {
    int64_t params = 0;
    for (size_t v = e.first_var; v < e.first_var + e.num_vars; ++v) params += num_elements(variables_[v].shape);
    out += fmt::format("{:<24} {:<19} {:<18} {}\n", e.name, e.layer->type(), shape_str(e.out_shape), params);
  }
  out += fmt::format("total parameters: {}\n", num_parameters());
  return out;
}

ReplicaState Model::make_replica_state(const ops::Context& ctx) const {
  ReplicaState rs;
  rs.ctx = ctx;
  rs.values.resize(variables_.size());
  rs.grads.resize(variables_.size());
  for (size_t i = 0; i < variables_.size(); ++i) {
    if (variables_[i].trainable) rs.grads[i] = Tensor::zeros(variables_[i].shape, DType::f32, ctx.device);
  }
  rs.activations.resize(layers_.size());
  rs.caches.resize(layers_.size());
  rs.input_grads.resize(layers_.size());
  return rs;
}

const Tensor& Model::forward(const ForwardContext& ctx, ReplicaState& rs, const Tensor& x) const {
  const Tensor* in = &x;
  for (size_t i = 0; i < layers_.size(); ++i) {
    const Entry& e = layers_[i];
    std::span<Tensor> params(rs.values.data() + e.first_var, e.num_vars);
    e.layer->forward(ctx, params, *in, rs.activations[i], rs.caches[i]);
    in = &rs.activations[i];
  }
  return *in;
}

void Model::backward(const ForwardContext& ctx, ReplicaState& rs, const Tensor& x, const Tensor& dlogits,
                     const std::function<void(size_t)>& layer_done) const {
  const Tensor* dy = &dlogits;
  for (size_t k = layers_.size(); k-- > 0;) {
    const Entry& e = layers_[k];
    const Tensor& in = k == 0 ? x : rs.activations[k - 1];
    std::span<const Tensor> params(rs.values.data() + e.first_var, e.num_vars);
    std::span<Tensor> grads(rs.grads.data() + e.first_var, e.num_vars);
    // The first layer's input gradient is never needed.
    Tensor* dx = k == 0 ? nullptr : &rs.input_grads[k];
    e.layer->backward(ctx, params, grads, in, rs.activations[k], *dy, dx, rs.caches[k]);
    if (layer_done) layer_done(k);
    if (dx != nullptr) dy = dx;
  }
}

}  // namespace dtrain
