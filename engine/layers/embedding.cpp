// Embedding: a row gather forward and a scatter-add backward, plain loops.
#include "engine/layers/embedding.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>
#include <limits>

#include "engine/layers/layer_util.hpp"
#include "engine/layers/registry.hpp"
#include "engine/ops/dispatch.hpp"

namespace dtrain {

namespace {

// Element i of x as a row index, or -1 when it is not an integer id in
// [0, rows). Reads raw memory: call inside a kernel (or on a host tensor).
int64_t token_at(const Tensor& x, int64_t i, int64_t rows) {
  if (x.dtype() == DType::i32) {
    const int32_t v = static_cast<const int32_t*>(x.raw())[i];
    return v >= 0 && v < rows ? v : -1;
  }
  const double v = static_cast<const float*>(x.raw())[i];
  // Written so that NaN fails every test; compared in double so that no
  // rounding of `rows` lets an id past the table through.
  if (!(v >= 0.0 && v < static_cast<double>(rows) && v == std::floor(v))) return -1;
  return static_cast<int64_t>(v);
}

}  // namespace

Result<Shape> Embedding::build(const Shape& input) {
  Shape out = input;
  out.push_back(output_dim_);
  return out;
}

std::vector<ParamSpec> Embedding::params() const { return {{"embeddings", {input_dim_, output_dim_}, init_, true}}; }

Status Embedding::check_input(const Tensor& x) const {
  // A host tensor: host_data()/data() refuse (and abort on) anything else.
  const int32_t* ints = x.dtype() == DType::i32 ? x.host_data<int32_t>() : nullptr;
  const float* floats = ints == nullptr ? x.data() : nullptr;
  const int64_t batch = x.rank() == 0 ? 1 : x.dim(0);
  const int64_t per = batch == 0 ? 1 : std::max<int64_t>(1, x.numel() / batch);
  for (int64_t i = 0; i < x.numel(); ++i) {
    if (token_at(x, i, input_dim_) >= 0) continue;
    const bool integral = ints != nullptr || (std::isfinite(floats[i]) && floats[i] == std::floor(floats[i]));
    const std::string value = ints != nullptr ? std::to_string(ints[i]) : fmt::format("{}", floats[i]);
    return data_error(fmt::format("id {} at example {}, position {} {}", value, i / per, i % per,
                                  integral ? fmt::format("is out of range for input_dim {}", input_dim_)
                                           : std::string("is not an integer token id")));
  }
  return Status::Ok();
}

void Embedding::forward(const ForwardContext& ctx, std::span<Tensor> params, const Tensor& x, Tensor& y,
                        LayerCache&) const {
  assert(x.dtype() == DType::i32 || x.dtype() == DType::f32);
  const int64_t tokens = x.numel(), d = output_dim_;
  Shape y_shape = x.shape();
  y_shape.push_back(d);
  prepare_output(y, y_shape, {&x, &params[0]});
  ops::on_device(*ctx.ops, "embedding", {&x, &params[0], &y}, [&] {
    const auto* table = static_cast<const float*>(params[0].raw());
    auto* out = static_cast<float*>(y.raw());
    for (int64_t t = 0; t < tokens; ++t) {
      const int64_t id = token_at(x, t, input_dim_);
      float* row = out + t * d;
      if (id < 0) {
        std::fill(row, row + d, std::numeric_limits<float>::quiet_NaN());
      } else {
        std::memcpy(row, table + id * d, static_cast<size_t>(d) * sizeof(float));
      }
    }
  });
}

void Embedding::backward(const ForwardContext& ctx, std::span<const Tensor>, std::span<Tensor> grads,
                         const Tensor& x, const Tensor&, const Tensor& dy, Tensor* dx, const LayerCache&) const {
  const int64_t tokens = x.numel(), d = output_dim_;
  assert(dy.numel() == tokens * d);
  prepare_output(grads[0], {input_dim_, d}, {&x, &dy});
  if (dx != nullptr) prepare_output(*dx, x.shape(), {&x, &dy});
  ops::on_device(*ctx.ops, "embedding_backward", {&x, &dy, &grads[0], dx}, [&] {
    const auto* g = static_cast<const float*>(dy.raw());
    auto* table = static_cast<float*>(grads[0].raw());
    std::fill(table, table + input_dim_ * d, 0.0f);
    for (int64_t t = 0; t < tokens; ++t) {
      const int64_t id = token_at(x, t, input_dim_);
      if (id < 0) continue;
      float* row = table + id * d;
      const float* gr = g + t * d;
      for (int64_t j = 0; j < d; ++j) row[j] += gr[j];
    }
    if (dx != nullptr) {
      auto* out = static_cast<float*>(dx->raw());
      std::fill(out, out + dx->numel(), 0.0f);
    }
  });
}

std::span<const Field> embedding_fields() {
  static const Field kFields[] = {
      field<&EmbeddingSpec::input_dim>("input_dim", "Size of the vocabulary: token ids run from 0 to input_dim - 1.")
          .min(1)
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
  if (s.input_dim < 1) {
    return config_error(fmt::format("embedding: input_dim (the number of token ids) must be >= 1; got {}", s.input_dim));
  }
  if (s.output_dim < 1) return config_error(fmt::format("embedding: output_dim must be >= 1; got {}", s.output_dim));
  return std::unique_ptr<Layer>(std::make_unique<Embedding>(s.input_dim, s.output_dim, s.embeddings_initializer));
}

}  // namespace dtrain
