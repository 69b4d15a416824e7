// Embedding lookup, Keras Embedding(input_dim, output_dim): each integer
// token id selects a row of the embeddings table.
//   x: (B, ...) token ids, int32 (the model refuses a float32 input to an
//      embedding when it is built; the kernels also read float32 holding
//      integers, which the layer tests use)
//   embeddings: (input_dim, output_dim), default U(-0.05, 0.05) (Keras "uniform")
//   y: (B, ..., output_dim)
// An id that is not an integer in [0, input_dim) is never read through: its
// output row is NaN and it adds nothing to the gradient. check_input() reports
// it as a data error before that, naming where the id is in the data.
// Ids are not differentiable: dx, when asked for, is zero-filled (float32,
// x's shape), so a reshape before the embedding passes back zeros.
// Float32 under every compute type (a lookup and a scatter-add).
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include <utility>

#include "engine/base/job_spec.hpp"
#include "engine/layer.hpp"

namespace dtrain {

class Embedding : public Layer {
 public:
  Embedding(int64_t input_dim, int64_t output_dim, InitializerSpec init)
      : input_dim_(input_dim), output_dim_(output_dim), init_(std::move(init)) {}

  std::string type() const override { return "embedding"; }
  std::vector<std::string_view> ops() const override { return {"embedding"}; }
  // Any input shape (the ids of one example); output = input + (output_dim).
  Result<Shape> build(const Shape& input) override;
  // embeddings (input_dim, output_dim), trainable.
  std::vector<ParamSpec> params() const override;
  // x: host tensor. A kData error for the first id that is not an integer in
  // [0, input_dim), e.g. "train.csv:14:3 (column \"city\"): id 57 of
  // model.input is out of range for layer \"embed\" (input_dim 50: ids 0..49)"
  // (without at.place: "example 3, position 5: ...", the row in the batch
  // and the position in the flattened example).
  Status check_input(const Tensor& x, const InputCheck& at) const override;
  bool takes_token_ids() const override { return true; }
  void forward(const ForwardContext& ctx, std::span<Tensor> params, const Tensor& x, Tensor& y,
               LayerCache& cache) const override;
  // dembeddings[id] = sum of dy rows whose token is id (a scatter-add in
  // token order); rows of ids never seen are 0.
  void backward(const ForwardContext& ctx, std::span<const Tensor> params, std::span<Tensor> grads, const Tensor& x,
                const Tensor& y, const Tensor& dy, Tensor* dx, const LayerCache& cache) const override;
  bool backward_reads_output() const override { return false; }  // x: the ids

 private:
  int64_t input_dim_, output_dim_;
  InitializerSpec init_;
};

// An embedding layer's options in the job (type: embedding).
struct EmbeddingSpec {
  int64_t input_dim = 0;   // vocabulary size (ids 0 .. input_dim - 1); 0 = auto (estimator/vocabulary.cpp resolves it)
  int64_t output_dim = 0;  // size of each vector
  InitializerSpec embeddings_initializer{"random_uniform", 0.0f};  // U(-0.05, 0.05)
};
std::span<const Field> embedding_fields();
Result<std::unique_ptr<Layer>> make_embedding(const LayerSpec& spec);

}  // namespace dtrain
