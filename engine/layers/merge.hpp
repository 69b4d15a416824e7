// Merge layers: add, subtract, multiply, average, maximum and concatenate
// (Keras' merging layers). Shapes must match exactly (concatenate: except
// along its axis): there is no silent broadcasting.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include <string>

#include "engine/base/job_spec.hpp"
#include "engine/layer.hpp"

namespace dtrain {

enum class MergeKind { kAdd, kSubtract, kMultiply, kAverage, kMaximum };

class Merge final : public MultiInputLayer {
 public:
  explicit Merge(MergeKind kind) : kind_(kind) {}
  MergeKind kind() const { return kind_; }
  std::string type() const override;
  std::vector<std::string_view> ops() const override { return {"merge"}; }
  int arity() const override { return kind_ == MergeKind::kSubtract ? 2 : kAnyArity; }
  Result<Shape> build_inputs(std::span<const Shape> inputs) override;
  void forward_inputs(const ForwardContext& ctx, std::span<Tensor> params, std::span<const Tensor* const> xs,
                      Tensor& y, LayerCache& cache) const override;
  void backward_inputs(const ForwardContext& ctx, std::span<const Tensor> params, std::span<Tensor> grads,
                       std::span<const Tensor* const> xs, const Tensor& y, const Tensor& dy,
                       std::span<Tensor* const> dxs, const LayerCache& cache) const override;
  // add, subtract and average need only dy; multiply and maximum read the inputs.
  bool backward_reads_inputs() const override {
    return kind_ == MergeKind::kMultiply || kind_ == MergeKind::kMaximum;
  }
  bool backward_reads_output() const override { return false; }

 private:
  MergeKind kind_;
};

// Joins its inputs along `axis` (of the per-example shape; negative counts
// from the end, Keras' default -1).
class Concatenate final : public MultiInputLayer {
 public:
  explicit Concatenate(int64_t axis) : axis_(axis) {}
  int64_t resolved_axis() const { return resolved_axis_; }  // 0-based, per example; valid after build
  std::string type() const override { return "concatenate"; }
  std::vector<std::string_view> ops() const override { return {"merge"}; }
  int arity() const override { return kAnyArity; }
  Result<Shape> build_inputs(std::span<const Shape> inputs) override;
  void forward_inputs(const ForwardContext& ctx, std::span<Tensor> params, std::span<const Tensor* const> xs,
                      Tensor& y, LayerCache& cache) const override;
  void backward_inputs(const ForwardContext& ctx, std::span<const Tensor> params, std::span<Tensor> grads,
                       std::span<const Tensor* const> xs, const Tensor& y, const Tensor& dy,
                       std::span<Tensor* const> dxs, const LayerCache& cache) const override;
  bool backward_reads_inputs() const override { return false; }  // the shapes only
  bool backward_reads_output() const override { return false; }

 private:
  int64_t axis_;
  int64_t resolved_axis_ = 0;       // 0-based in the per-example shape
  std::vector<int64_t> widths_;     // each input's size along the axis times the inner size
  int64_t inner_ = 1;               // product of the dims after the axis
  int64_t out_width_ = 0;           // sum of widths_
};

// add's one option, its activation (LayerSpec::activation); concatenate's axis.
std::span<const Field> add_fields();
struct ConcatenateSpec {
  int64_t axis = -1;  // of the per-example shape; negative counts from the end
};
std::span<const Field> concatenate_fields();
template <MergeKind kKind>
Result<std::unique_ptr<Layer>> make_merge(const LayerSpec&) {
  return std::unique_ptr<Layer>(std::make_unique<Merge>(kKind));
}
Result<std::unique_ptr<Layer>> make_concatenate(const LayerSpec& spec);

}  // namespace dtrain
