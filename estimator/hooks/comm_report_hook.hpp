// In a cluster: adds up each step's cross-worker communication time and, at
// the end of training, prints the strategy's report of it
// (Strategy::comm_report: the all-reduce's share, the ps RPCs).
#pragma once

#include <chrono>
#include <cstdint>

#include "estimator/hooks/training_hook.hpp"
#include "estimator/logger.hpp"
#include "strategies/strategy.hpp"

namespace dtrain {

class CommReportHook : public TrainingHook {
 public:
  CommReportHook(Logger& log, const Strategy& strategy) : log_(log), strategy_(strategy) {}
  Status after_step(StepState& s) override;
  Status end(int64_t step) override;

 private:
  Logger& log_;
  const Strategy& strategy_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  Strategy::CommTotals totals_;
};

}  // namespace dtrain
