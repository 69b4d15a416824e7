// Embedding: a row gather forward and a scatter-add backward (ops::embedding_forward,
// _backward), and the check of a batch's ids.
#include "engine/layers/embedding.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <cmath>

#include "engine/layers/layer_util.hpp"
#include "engine/layers/registry.hpp"
#include "engine/kernels/embedding.hpp"
#include "engine/ops/layer_ops.hpp"

namespace dtrain {

Result<Shape> Embedding::build(const Shape& input) {
  Shape out = input;
  out.push_back(output_dim_);
  return out;
}

std::vector<ParamSpec> Embedding::params() const { return {{"embeddings", {input_dim_, output_dim_}, init_, true}}; }

Status Embedding::check_input(const Tensor& x, const InputCheck& at) const {
  // A host tensor: host_data()/data() refuse (and abort on) anything else.
  const int32_t* ints = x.dtype() == DType::i32 ? x.host_data<int32_t>() : nullptr;
  const float* floats = ints == nullptr ? x.data() : nullptr;
  for (int64_t i = 0; i < x.numel(); ++i) {
    const int64_t row =
        ints != nullptr ? kernels::embedding_row(ints[i], input_dim_) : kernels::embedding_row(floats[i], input_dim_);
    if (row >= 0) continue;
    const bool integral = ints != nullptr || (std::isfinite(floats[i]) && floats[i] == std::floor(floats[i]));
    const std::string value = ints != nullptr ? std::to_string(ints[i]) : fmt::format("{}", floats[i]);
    return data_error(fmt::format("{}: id {} of {} {} for layer \"{}\" (input_dim {}: ids 0..{})", at.place_of(x, i),
                                  value, at.input, integral ? "is out of range" : "is not a whole number", at.layer,
                                  input_dim_, input_dim_ - 1));
  }
  return Status::Ok();
}

void Embedding::forward(const ForwardContext& ctx, std::span<Tensor> params, const Tensor& x, Tensor& y,
                        LayerCache&) const {
  Shape y_shape = x.shape();
  y_shape.push_back(output_dim_);
  prepare_output(y, y_shape, {&x, &params[0]});
  ops::embedding_forward(*ctx.ops, x, params[0], y);
}

void Embedding::backward(const ForwardContext& ctx, std::span<const Tensor>, std::span<Tensor> grads,
                         const Tensor& x, const Tensor&, const Tensor& dy, Tensor* dx, const LayerCache&) const {
  assert(dy.numel() == x.numel() * output_dim_);
  prepare_output(grads[0], {input_dim_, output_dim_}, {&x, &dy});
  if (dx != nullptr) prepare_output(*dx, x.shape(), {&x, &dy});
  ops::embedding_backward(*ctx.ops, x, dy, grads[0], dx);
}

std::span<const Field> embedding_fields() {
  static const Field kFields[] = {
      custom<&EmbeddingSpec::input_dim>(
          "input_dim",
          "Size of the vocabulary: token ids run from 0 to input_dim - 1. auto: the size of the vocabulary of the "
          "job's text data (format text or text_folder), as saved with the model (model_dir/vocab.json or "
          "model_dir/token_vocab.json), else as data.train's files give it; dtrain validate prints the number.",
          "auto_int")
          .shaped(R"({"oneOf": [{"enum": ["auto"]}, {"type": "integer", "minimum": 1}]})")
          .need(),
      field<&EmbeddingSpec::output_dim>("output_dim", "Size of each embedding vector.").min(1).need(),
      field<&EmbeddingSpec::embeddings_initializer>(
          "embeddings_initializer",
          "Initializer of the embeddings: a name, or a mapping such as {type: random_uniform, minval: -0.1, maxval: "
          "0.1}. The default, random_uniform, draws from U(-0.05, 0.05) like Keras Embedding's \"uniform\"."),
  };
  return kFields;
}

Result<std::unique_ptr<Layer>> make_embedding(const LayerSpec& spec) {
  const auto& s = layer_options<EmbeddingSpec>(spec);
  if (s.input_dim == 0) {
    return config_error("embedding: input_dim: auto takes the size of the vocabulary of the job's text data, and this "
                        "job has none (data.train of format text or text_folder, or a vocabulary saved in model_dir); "
                        "give the number of token ids");
  }
  if (s.input_dim < 1) {
    return config_error(fmt::format("embedding: input_dim (the number of token ids) must be >= 1; got {}", s.input_dim));
  }
  if (s.output_dim < 1) return config_error(fmt::format("embedding: output_dim must be >= 1; got {}", s.output_dim));
  return std::unique_ptr<Layer>(std::make_unique<Embedding>(s.input_dim, s.output_dim, s.embeddings_initializer));
}

}  // namespace dtrain
