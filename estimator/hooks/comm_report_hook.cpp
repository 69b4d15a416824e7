// The communication report at the end of training (estimator/hooks/comm_report_hook.hpp).
#include "estimator/hooks/comm_report_hook.hpp"

#include <string>

namespace dtrain {

Status CommReportHook::after_step(StepState& s) {
  totals_.seconds += s.comm_seconds;
  totals_.exposed_seconds += s.comm_exposed_seconds;
  ++totals_.steps;
  return Status::Ok();
}

Status CommReportHook::end(int64_t step) {
  (void)step;
  if (totals_.steps == 0) return Status::Ok();
  totals_.step_ms = 1e3 * seconds_since(start_) / static_cast<double>(totals_.steps);
  for (const std::string& line : strategy_.comm_report(totals_)) log_.info(line);
  return Status::Ok();
}

}  // namespace dtrain
