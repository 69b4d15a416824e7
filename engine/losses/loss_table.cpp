// make_loss: the one table of losses (name, kind, constructor).
#include <array>

#include "engine/losses/choice_error.hpp"
#include "engine/losses/loss.hpp"
#include "engine/losses/loss_kind.hpp"

namespace dtrain {

namespace {
struct LossEntry {
  const char* name;
  LossKind kind;
  std::unique_ptr<Loss> (*make)();
};

constexpr std::array<LossEntry, 4> kLosses{{
    {"sparse_softmax_cross_entropy", LossKind::kSparseSoftmaxCrossEntropy, &new_sparse_softmax_cross_entropy},
    {"softmax_cross_entropy", LossKind::kSoftmaxCrossEntropy, &new_softmax_cross_entropy},
    {"sigmoid_cross_entropy", LossKind::kSigmoidCrossEntropy, &new_sigmoid_cross_entropy},
    {"mean_squared_error", LossKind::kMeanSquaredError, &new_mean_squared_error},
}};

const LossEntry* find_loss(const std::string& name) {
  for (const LossEntry& e : kLosses) {
    if (name == e.name) return &e;
  }
  return nullptr;
}

Error unknown_loss(const std::string& name) {
  return unknown_choice_error("loss", name, {kLosses[0].name, kLosses[1].name, kLosses[2].name, kLosses[3].name});
}
}  // namespace

Result<LossKind> parse_loss_kind(const std::string& name) {
  const LossEntry* e = find_loss(name);
  if (e == nullptr) return unknown_loss(name);
  return e->kind;
}

const char* loss_kind_name(LossKind kind) {
  for (const LossEntry& e : kLosses) {
    if (e.kind == kind) return e.name;
  }
  return "?";
}

Result<std::unique_ptr<Loss>> make_loss(const std::string& name) {
  const LossEntry* e = find_loss(name);
  if (e == nullptr) return unknown_loss(name);
  return e->make();
}

}  // namespace dtrain

namespace dtrain {

void prepare_dlogits(const Tensor& logits, Tensor* dlogits) {
  if (dlogits == nullptr) return;
  if (dlogits->shape() != logits.shape() || dlogits->device() != logits.device() || dlogits->dtype() != DType::f32) {
    *dlogits = Tensor::empty(logits.shape(), DType::f32, logits.device());
  }
}

void count_loss_read(const ops::Context& ctx) {
  if (!ctx.device.is_host()) count_copy(kHost, ctx.device);
}

}  // namespace dtrain
