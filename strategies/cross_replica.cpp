// The in-process replica group's sum (see cross_replica.hpp).
#include "strategies/cross_replica.hpp"

#include <algorithm>
#include <cassert>

#include "engine/base/status.hpp"

namespace dtrain {

class ReplicaGroupSum::Handle final : public CrossReplicaSum {
 public:
  Handle(ReplicaGroupSum& group, int r) : group_(group), r_(r) {}
  void all_reduce(std::span<double> values) override { group_.all_reduce(r_, values); }

 private:
  ReplicaGroupSum& group_;
  int r_;
};

ReplicaGroupSum::ReplicaGroupSum(int replicas, AcrossWorkers across_workers)
    : participating_(static_cast<size_t>(replicas), true),
      parts_(static_cast<size_t>(replicas)),
      across_workers_(std::move(across_workers)) {
  for (int r = 0; r < replicas; ++r) handles_.push_back(std::make_unique<Handle>(*this, r));
}

ReplicaGroupSum::~ReplicaGroupSum() = default;

CrossReplicaSum* ReplicaGroupSum::replica(int r) { return handles_[static_cast<size_t>(r)].get(); }

void ReplicaGroupSum::begin_step(const std::vector<bool>& participating) {
  std::lock_guard<std::mutex> lock(mu_);
  assert(participating.size() == participating_.size());
  participating_ = participating;
  arrived_ = 0;
  abandoned_ = false;
}

void ReplicaGroupSum::abandon() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    abandoned_ = true;
  }
  cv_.notify_all();
}

namespace {

[[noreturn]] void throw_abandoned() {
  throw ErrorException{runtime_error("batch_norm's sum over the replicas was abandoned: another replica failed")};
}

}  // namespace

void ReplicaGroupSum::all_reduce(int r, std::span<double> values) {
  std::unique_lock<std::mutex> lock(mu_);
  if (abandoned_) throw_abandoned();
  const int expected = static_cast<int>(std::count(participating_.begin(), participating_.end(), true));
  parts_[static_cast<size_t>(r)].assign(values.begin(), values.end());
  const uint64_t round = round_;
  if (++arrived_ == expected) {
    // The last to arrive sums in replica order, then over the workers.
    result_.assign(values.size(), 0.0);
    for (size_t k = 0; k < parts_.size(); ++k) {
      if (!participating_[k]) continue;
      assert(parts_[k].size() == values.size());
      for (size_t i = 0; i < values.size(); ++i) result_[i] += parts_[k][i];
    }
    if (across_workers_) across_workers_(result_);
    arrived_ = 0;
    ++round_;
    cv_.notify_all();
  } else {
    cv_.wait(lock, [&] { return round_ != round || abandoned_; });
    if (round_ == round) throw_abandoned();
  }
  std::copy(result_.begin(), result_.end(), values.begin());
}

}  // namespace dtrain
