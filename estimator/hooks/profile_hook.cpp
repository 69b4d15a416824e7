// The profile window in the training loop (estimator/hooks/profile_hook.hpp).
#include "estimator/hooks/profile_hook.hpp"

namespace dtrain {

Status ProfileHook::before_step(StepState& s) {
  s.profiler = window_.begin_step(s.step_before);
  input_.set_profiler(s.profiler);
  if (s.profiler != nullptr) step_.emplace(s.profiler, "step");
  return Status::Ok();
}

Status ProfileHook::after_step(StepState& s) {
  step_.reset();
  if (window_.should_close(s.step_before, s.ends())) return close(s.step);
  return Status::Ok();
}

Status ProfileHook::end(int64_t step) { return window_.open() ? close(step) : Status::Ok(); }

Status ProfileHook::close(int64_t next_step) {
  auto lines = window_.close(next_step);
  if (!lines) return lines.error();
  log_.end_progress();
  for (const std::string& l : *lines) log_.info(l);
  return Status::Ok();
}

}  // namespace dtrain
