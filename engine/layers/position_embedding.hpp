// Learned position embedding, after keras_hub PositionEmbedding(sequence_length):
// a (sequence_length, C) table whose first T rows are added to a (T, C)
// sequence. keras_hub's layer returns the embeddings alone for the caller to
// add; a sequential model has no add, so this layer adds its input:
//   x, y: (B, ..., T, C)   embeddings: (sequence_length, C), glorot_uniform
//   y = x + embeddings[:T]   (broadcast over B and any other leading axes)
// REQUIRES (build): T <= sequence_length. Float32 under every compute type.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/base/job_spec.hpp"
#include "engine/layer.hpp"

namespace dtrain {

class PositionEmbedding : public Layer {
 public:
  explicit PositionEmbedding(int64_t sequence_length) : sequence_length_(sequence_length) {}

  std::string type() const override { return "position_embedding"; }
  std::vector<std::string_view> ops() const override { return {"position_embedding"}; }
  // REQUIRES: input of rank >= 2, (..., T, C); T > sequence_length is a config
  // error naming both lengths.
  Result<Shape> build(const Shape& input) override;
  // embeddings (sequence_length, C), trainable.
  std::vector<ParamSpec> params() const override;
  void forward(const ForwardContext& ctx, std::span<Tensor> params, const Tensor& x, Tensor& y,
               LayerCache& cache) const override;
  // dembeddings[:T] = sum of dy over B (and leading axes), rows T.. are 0;
  // dx = dy (a view sharing dy's storage).
  void backward(const ForwardContext& ctx, std::span<const Tensor> params, std::span<Tensor> grads, const Tensor& x,
                const Tensor& y, const Tensor& dy, Tensor* dx, const LayerCache& cache) const override;
  bool backward_reads_inputs() const override { return false; }
  bool backward_reads_output() const override { return false; }

 private:
  int64_t sequence_length_;
  int64_t steps_ = 0, channels_ = 0;  // T, C
};

// A position_embedding layer's options in the job.
struct PositionEmbeddingSpec {
  int64_t sequence_length = 0;  // the longest sequence it embeds
};
std::span<const Field> position_embedding_fields();
Result<std::unique_ptr<Layer>> make_position_embedding(const LayerSpec& spec);

}  // namespace dtrain
