// The model graph: wires layers by name, infers shapes in one pass that
// reports every problem, and makes replica states (passes: model_passes.cpp).
#include "engine/model/model.hpp"

#include <optional>
#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <map>
#include <set>

#include "engine/base/did_you_mean.hpp"
#include "engine/layers/registry.hpp"
#include "engine/ops/core.hpp"
#include "engine/ops/support.hpp"
#include "engine/optim/initializers.hpp"

namespace dtrain {

namespace {

// "job.yaml:7:7: model.layers[0] (conv2d)", or for a block's copy
// "job.yaml:7:7: conv3_block1_1_conv (conv2d)" (its note then says which copy).
std::string place_of(const LayerSpec& ls, size_t i) {
  const std::string where = ls.where.empty() ? "" : ls.where + ": ";
  if (!ls.note.empty()) return fmt::format("{}{} ({})", where, ls.name, ls.type);
  if (!ls.origin.empty()) return fmt::format("{}{} ({})", where, ls.origin, ls.type);
  return fmt::format("{}model.layers[{}] ({})", where, i, ls.type);
}

std::string with_note(const LayerSpec& ls, std::string msg) {
  if (!ls.note.empty()) msg += "\n  note: " + ls.note;
  return msg;
}

std::string names_str(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace

namespace {
std::string no_output_message(const Model& model, const std::string& name) {
  if (model.num_outputs() == 1 && model.outputs()[0].where.empty()) {
    return fmt::format("\"{}\" reaches no output: nothing below uses it and it is not the last layer (the model's output)",
                       name);
  }
  std::string outs;
  for (const ModelOutput& o : model.outputs()) outs += (outs.empty() ? "" : ", ") + o.name;
  return fmt::format("\"{}\" reaches none of the outputs ({}): nothing below uses it and it is not one of "
                     "model.outputs; add it there or remove it",
                     name, outs);
}
}  // namespace

Result<std::unique_ptr<Model>> Model::build(const ModelSpec& spec) {
  auto model = std::make_unique<Model>();
  std::vector<std::string> errors;
  std::vector<ModelInputSpec> input_specs{{spec.input_name, spec.input_shape, spec.input_dtype, spec.input_where}};
  input_specs.insert(input_specs.end(), spec.extra_inputs.begin(), spec.extra_inputs.end());
  for (const ModelInputSpec& in : input_specs) {
    ModelInput mi{in.name, Shape(in.shape.begin(), in.shape.end()), DType::f32, in.where};
    const std::string key = spec.extra_inputs.empty() ? "model.input" : "model.inputs." + in.name;
    if (const auto dt = parse_dtype(in.dtype); dt && (*dt == DType::f32 || *dt == DType::i32)) {
      mi.dtype = *dt;
    } else {
      errors.push_back(fmt::format("{}{}.dtype: \"{}\" is not an input type; expected float32 or int32",
                                   in.where.empty() ? "" : in.where + ": ", key, in.dtype));
    }
    model->inputs_.push_back(std::move(mi));
  }

  // Every name in the file with where it is, so that a reference to a layer
  // further down says so instead of "unknown".
  std::map<std::string, std::string> defined_anywhere;
  for (const LayerSpec& ls : spec.layers) defined_anywhere.emplace(ls.name, ls.where);

  // name -> the entry holding that layer's output (model_input(k) for input k).
  std::map<std::string, int> value_of;
  for (size_t k = 0; k < model->inputs_.size(); ++k) {
    if (!value_of.emplace(model->inputs_[k].name, model_input(k)).second) {
      errors.push_back(fmt::format("{}: model.inputs.{}: duplicate input name", model->inputs_[k].where,
                                   model->inputs_[k].name));
    }
  }
  std::set<int> failed;  // entries whose shape is unknown: errors below them would only echo theirs
  std::vector<int> spec_output(spec.layers.size(), model_input(0));
  std::map<std::string, int> type_counts;

  for (size_t i = 0; i < spec.layers.size(); ++i) {
    const LayerSpec& ls = spec.layers[i];
    std::string name = ls.name;
    if (name.empty()) {
      const int n = type_counts[ls.type]++;
      name = n == 0 ? ls.type : fmt::format("{}_{}", ls.type, n);
    }
    const std::string place = place_of(ls, i);
    auto report = [&](const std::string& msg) { errors.push_back(fmt::format("{}: {}", place, with_note(ls, msg))); };

    // Inputs: the names given, or the layer above.
    std::vector<int> inputs;
    bool inputs_ok = true;
    if (ls.inputs.empty() && i == 0 && model->inputs_.size() > 1) {
      std::vector<std::string> names;
      for (const ModelInput& in : model->inputs_) names.push_back(in.name);
      report(fmt::format("inputs: not given, so the layer would read the model's input, but the model has {} inputs "
                         "({}); name the one it reads, e.g. inputs: {}",
                         names.size(), names_str(names), names[0]));
      inputs_ok = false;
      inputs.push_back(model_input(0));
    } else if (ls.inputs.empty()) {
      inputs.push_back(i == 0 ? model_input(0) : spec_output[i - 1]);
    } else {
      for (size_t j = 0; j < ls.inputs.size(); ++j) {
        const std::string& in = ls.inputs[j];
        auto it = value_of.find(in);
        if (it != value_of.end()) {
          inputs.push_back(it->second);
          continue;
        }
        inputs_ok = false;
        // Said at the input's own position when the file has one.
        const std::string at =
            j < ls.inputs_where.size() && !ls.inputs_where[j].empty() ? ls.inputs_where[j] : ls.where;
        const std::string here = (at.empty() ? "" : at + ": ") + place.substr(ls.where.empty() ? 0 : ls.where.size() + 2);
        std::string msg;
        auto below = defined_anywhere.find(in);
        if (in == name) {
          msg = fmt::format("inputs: \"{}\" is this layer itself; a layer can only use layers above it", in);
        } else if (below != defined_anywhere.end()) {
          msg = fmt::format("inputs: \"{}\" is defined below, at {}; a layer can only use layers above it", in,
                            below->second);
        } else {
          std::vector<std::string> known;
          for (const auto& [k, v] : value_of) known.push_back(k);
          msg = fmt::format("inputs: unknown layer \"{}\"{}", in, did_you_mean(in, known));
        }
        errors.push_back(fmt::format("{}: {}", here, with_note(ls, msg)));
      }
    }

    auto layer = make_layer(ls);
    if (!layer) {
      report(layer.error().message);
      failed.insert(static_cast<int>(model->layers_.size()));
      spec_output[i] = static_cast<int>(model->layers_.size());
      // The error is reported and the model is not returned; the entry only
      // keeps the name known, so layers reading it report nothing of their own.
      value_of[name] = spec_output[i];
      model->layers_.push_back({nullptr, name, place, model->variables_.size(), 0, {}, inputs});
      continue;
    }
    const int arity = (*layer)->arity();
    if (inputs_ok) {
      std::vector<std::string> given = ls.inputs.empty() ? std::vector<std::string>{} : ls.inputs;
      if (arity == 1 && inputs.size() != 1) {
        report(fmt::format("{} takes one input; got {} ({})", ls.type, inputs.size(), names_str(given)));
        inputs_ok = false;
      } else if (arity == Layer::kAnyArity && inputs.size() < 2) {
        report(fmt::format("{} merges two or more inputs; got {}{} (list them: inputs: [a, b])", ls.type,
                           inputs.size(), given.empty() ? " (the layer above)" : " (" + names_str(given) + ")"));
        inputs_ok = false;
      } else if (arity > 1 && static_cast<int>(inputs.size()) != arity) {
        report(fmt::format("{} takes exactly {} inputs; got {}{}", ls.type, arity, inputs.size(),
                           given.empty() ? " (the layer above)" : " (" + names_str(given) + ")"));
        inputs_ok = false;
      }
    }
    bool known_shapes = inputs_ok;
    for (int in : inputs) known_shapes = known_shapes && failed.count(in) == 0;
    const bool token_ids = inputs_ok && known_shapes && check_token_ids(*model, **layer, inputs, report);

    const int index = static_cast<int>(model->layers_.size());
    if (value_of.count(name) != 0) {
      report(fmt::format("duplicate layer name \"{}\"{}", name,
                         value_of.at(name) >= 0            ? ""
                         : model->inputs_.size() == 1 ? " (it is the model's input)"
                                                      : " (it is a model input)"));
    }
    const bool fused = !ls.activation.empty() && ls.type != "activation" && (*layer)->fuse_activation(ls.activation);
    Shape out;
    if (known_shapes) {
      std::vector<Shape> in_shapes;
      for (int in : inputs) in_shapes.push_back(model->shape_of(in));
      auto built = (*layer)->build_inputs(in_shapes);
      if (!built) {
        std::string msg = built.error().message;
        if (inputs.size() > 1 && !ls.inputs.empty()) {
          msg += " (";
          for (size_t j = 0; j < inputs.size(); ++j) msg += fmt::format("{}{}: {}", j == 0 ? "" : ", ", ls.inputs[j], shape_str(in_shapes[j]));
          msg += ")";
        }
        report(msg);
        known_shapes = false;
      } else {
        out = *built;
        for (int64_t d : out) {
          if (d <= 0) {
            report(fmt::format("output shape {} has an empty dimension", shape_str(out)));
            known_shapes = false;
            break;
          }
        }
      }
    }
    Entry e{std::move(*layer), name, place, model->variables_.size(), 0, out, inputs, token_ids};
    if (known_shapes) {
      for (ParamSpec& p : e.layer->params()) {
        if (Status s = check_initializer(p.init); !s) report(p.name + ": " + s.error().message);
        model->variables_.push_back({name + "/" + p.name, p.shape, p.init, p.trainable});
        ++e.num_vars;
      }
    } else {
      failed.insert(index);
    }
    model->layers_.push_back(std::move(e));
    int output = index;
    if (!ls.activation.empty() && ls.type != "activation" && !fused) {
      auto act = make_activation(ls.activation);
      if (!act) {
        report(act.error().message);
        failed.insert(index);
      } else {
        Shape act_shape;
        if (known_shapes) {
          auto act_out = (*act)->build(out);
          if (!act_out) {
            report(act_out.error().message);
            failed.insert(index + 1);
          } else {
            act_shape = *act_out;
          }
        } else {
          failed.insert(index + 1);
        }
        model->layers_.push_back({std::move(*act), name + "/" + ls.activation, place, model->variables_.size(), 0,
                                  act_shape, {index}});
        output = index + 1;
      }
    }
    spec_output[i] = output;
    value_of[name] = output;
  }

  // Every layer must reach an output (the last layer, or one of model.outputs).
  if (!model->layers_.empty()) model->resolve_outputs(spec, value_of, errors);
  if (!model->layers_.empty() && errors.empty()) {
    std::vector<char> reaches(model->layers_.size(), 0);
    for (const ModelOutput& o : model->outputs_) reaches[o.entry] = 1;
    for (size_t k = model->layers_.size(); k-- > 0;) {
      if (!reaches[k]) continue;
      for (int in : model->layers_[k].inputs) {
        if (!is_model_input(in)) reaches[static_cast<size_t>(in)] = 1;
      }
    }
    // Every model input must be read by a layer that reaches the output.
    std::vector<char> read(model->inputs_.size(), 0);
    for (size_t k = 0; k < model->layers_.size(); ++k) {
      for (int in : model->layers_[k].inputs) {
        if (reaches[k] && is_model_input(in)) read[input_index(in)] = 1;
      }
    }
    for (size_t k = 0; k < read.size() && errors.empty(); ++k) {
      const ModelInput& in = model->inputs_[k];
      if (read[k] == 0) {
        errors.push_back(fmt::format("{}model.inputs.{}: no layer reads the input \"{}\" on the way to the output; "
                                     "read it with inputs: {} (or remove it)",
                                     in.where.empty() ? "" : in.where + ": ", in.name, in.name, in.name));
      }
    }
    for (size_t i = 0; i < spec.layers.size(); ++i) {
      if (!reaches[static_cast<size_t>(spec_output[i])] && errors.empty()) {
        const LayerSpec& ls = spec.layers[i];
        errors.push_back(fmt::format("{}: {}", place_of(ls, i),
                                     with_note(ls, no_output_message(*model, model->layers_[static_cast<size_t>(spec_output[i])].name))));
      }
    }
  }
  if (!errors.empty()) {
    std::string msg;
    for (const std::string& e : errors) msg += (msg.empty() ? "" : "\n") + e;
    return config_error(msg);
  }
  model->output_shape_ = model->layers_.empty() ? model->input_shape() : model->outputs_[0].shape;
  model->plan_buffers();
  return model;
}

void Model::resolve_outputs(const ModelSpec& spec, const std::map<std::string, int>& value_of,
                            std::vector<std::string>& errors) {
  if (spec.outputs.empty()) {
    outputs_.push_back({layers_.back().name, layers_.back().out_shape, "", layers_.size() - 1});
    return;
  }
  std::vector<std::string> layer_names;
  for (const LayerSpec& ls : spec.layers) layer_names.push_back(ls.name);
  for (const ModelOutputSpec& o : spec.outputs) {
    const std::string at = (o.where.empty() ? "" : o.where + ": ") + "model.outputs." + o.name + ": ";
    auto it = value_of.find(o.name);
    if (it == value_of.end()) {
      errors.push_back(fmt::format("{}unknown layer \"{}\"{}; an output is a layer of model.layers", at, o.name,
                                   did_you_mean(o.name, layer_names)));
    } else if (is_model_input(it->second)) {
      errors.push_back(fmt::format("{}\"{}\" is a model input; an output is a layer of model.layers", at, o.name));
    } else {
      const size_t entry = static_cast<size_t>(it->second);
      outputs_.push_back({o.name, layers_[entry].out_shape, o.where, entry});
    }
  }
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

bool Model::check_token_ids(const Model& model, const Layer& layer, const std::vector<int>& inputs,
                            const std::function<void(const std::string&)>& report) {
  auto holds_ids = [&](int in) {
    return is_model_input(in) ? model.inputs_[input_index(in)].dtype == DType::i32
                              : model.layers_[static_cast<size_t>(in)].token_ids;
  };
  for (int in : inputs) {
    if (layer.takes_token_ids() && !holds_ids(in)) {
      if (is_model_input(in)) {
        const ModelInput& mi = model.inputs_[input_index(in)];
        const std::string fix =
            mi.name == "input" && model.inputs_.size() == 1
                ? fmt::format("model.input: {{shape: {}, dtype: int32}}", shape_str(mi.shape))
                : fmt::format("model.inputs: {{{}: {{shape: {}, dtype: int32}}}}", mi.name, shape_str(mi.shape));
        report(fmt::format("{} reads integer token ids, but the model input \"{}\" is float32; declare it as ids: {}",
                           layer.type(), mi.name, fix));
      } else {
        report(fmt::format("{} reads integer token ids, but its input \"{}\" is a layer output (float32); an embedding "
                           "reads the model's int32 input (directly or through reshape/flatten)",
                           layer.type(), model.name_of(in)));
      }
      return false;
    }
    if (!layer.takes_token_ids() && holds_ids(in) && !layer.ops().empty()) {
      report(fmt::format("{} cannot read the int32 token ids of \"{}\"; ids go through an embedding first "
                         "(type: embedding, input_dim: the vocabulary size)",
                         layer.type(), model.name_of(in)));
      return false;
    }
  }
  // reshape and flatten only re-view: ids stay ids.
  return !inputs.empty() && !layer.takes_token_ids() && layer.ops().empty() && holds_ids(inputs[0]);
}

Status Model::check_input(const Tensor& features, std::span<const Tensor> extra, const ValuePlace& place) const {
  assert(extra.size() + 1 == inputs_.size());
  for (size_t k = 0; k < inputs_.size(); ++k) {
    const Tensor& t = k == 0 ? features : extra[k - 1];
    if (t.dtype() != inputs_[k].dtype) {
      return data_error(fmt::format("the data gives {} features{}, but {}.dtype is {}", dtype_name(t.dtype()),
                                    inputs_.size() == 1 ? "" : " for \"" + inputs_[k].name + "\"",
                                    inputs_.size() == 1 ? std::string("model.input") : "model.inputs." + inputs_[k].name,
                                    dtype_name(inputs_[k].dtype)));
    }
  }
  // The layers that read a model input as it is in the data: directly, or
  // through layers that run no op and only re-view it (reshape, flatten).
  // raw[k]: the model input (1 + its index) layer k's output re-views; 0: none.
  std::vector<size_t> raw(layers_.size(), 0);
  for (size_t k = 0; k < layers_.size(); ++k) {
    const Entry& e = layers_[k];
    size_t reads = 0;
    for (int in : e.inputs) {
      const size_t r = is_model_input(in) ? input_index(in) + 1 : raw[static_cast<size_t>(in)];
      if (reads == 0) reads = r;
    }
    if (reads == 0) continue;
    const size_t input = reads - 1;
    const Tensor& data = input == 0 ? features : extra[input - 1];
    InputCheck at{e.name, inputs_.size() == 1 ? std::string("model.input") : "model.inputs." + inputs_[input].name};
    if (place) {
      const int64_t per = data.rank() == 0 || data.dim(0) == 0 ? 1 : std::max<int64_t>(1, data.numel() / data.dim(0));
      at.place = [&place, input, per](int64_t i) { return place(input, i / per, i % per); };
    }
    if (Status s = e.layer->check_input(data, at); !s) return s;
    raw[k] = e.layer->ops().empty() ? reads : 0;
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
  for (const ModelInput& in : inputs_) out += fmt::format("{:<24} {:<19} {:<18} {}\n", in.name, "", shape_str(in.shape), 0);
  for (const Entry& e : layers_) {
    int64_t params = 0;
    for (size_t v = e.first_var; v < e.first_var + e.num_vars; ++v) params += num_elements(variables_[v].shape);
    out += fmt::format("{:<24} {:<19} {:<18} {}\n", e.name, e.layer->type(), shape_str(e.out_shape), params);
  }
  out += fmt::format("total parameters: {}\n", num_parameters());
  return out;
}

std::string Model::graph_summary() const {
  size_t width = 0;
  for (const ModelInput& in : inputs_) width = std::max(width, in.name.size());
  for (const Entry& e : layers_) width = std::max(width, e.name.size());
  std::string out = fmt::format("{:<{}}  {:<20}  {:<18}  {:>10}  {}\n", "layer", width, "type", "output", "params", "inputs");
  for (const ModelInput& in : inputs_) {
    out += fmt::format("{:<{}}  {:<20}  {:<18}  {:>10}  {}\n", in.name, width,
                       in.dtype == DType::f32 ? "input" : fmt::format("input ({})", dtype_name(in.dtype)),
                       shape_str(in.shape), 0, "");
  }
  for (const Entry& e : layers_) {
    int64_t params = 0;
    for (size_t v = e.first_var; v < e.first_var + e.num_vars; ++v) params += num_elements(variables_[v].shape);
    std::string ins;
    for (int in : e.inputs) ins += (ins.empty() ? "" : ", ") + name_of(in);
    for (const ModelOutput& o : outputs_) {
      // Marked only with model.outputs: the shorthand's output is the last line.
      if (!o.where.empty() && &layers_[o.entry] == &e) ins += fmt::format("  -> output {}", o.name);
    }
    out += fmt::format("{:<{}}  {:<20}  {:<18}  {:>10}  {}\n", e.name, width, e.layer->type(), shape_str(e.out_shape),
                       params, ins);
  }
  out += fmt::format("{} layers, {} variables, {} parameters ({} trainable)\n", layers_.size(), variables_.size(),
                     num_parameters(), [&] {
                       int64_t n = 0;
                       for (const VariableSpec& v : variables_) n += v.trainable ? num_elements(v.shape) : 0;
                       return n;
                     }());
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
  rs.output_grads.resize(layers_.size());
  rs.extra_grads.resize(layers_.size());
  rs.grad_written.assign(layers_.size(), 0);
  size_t max_inputs = 1;
  for (size_t i = 0; i < layers_.size(); ++i) {
    rs.extra_grads[i].resize(layers_[i].inputs.size());
    max_inputs = std::max(max_inputs, layers_[i].inputs.size());
  }
  rs.in_ptrs.resize(max_inputs);
  rs.dx_ptrs.resize(max_inputs);
  return rs;
}

}  // namespace dtrain
