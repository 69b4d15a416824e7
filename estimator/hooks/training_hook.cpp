// Running the hook list (estimator/hooks/training_hook.hpp).
#include "estimator/hooks/training_hook.hpp"

#include <cstring>

namespace dtrain {

Status run_before_step(const HookList& hooks, StepState& s) {
  for (const auto& h : hooks) {
    if (Status st = h->before_step(s); !st) return st;
  }
  return Status::Ok();
}

Status run_after_step(const HookList& hooks, StepState& s) {
  for (size_t i = 0; i < hooks.size();) {
    // hooks[i, j): one phase's run of hooks, under one span.
    const char* phase = hooks[i]->phase();
    size_t j = i + 1;
    while (phase != nullptr && j < hooks.size() && hooks[j]->phase() != nullptr &&
           std::strcmp(hooks[j]->phase(), phase) == 0) {
      ++j;
    }
    const ProfileScope span(phase != nullptr ? s.profiler : nullptr, phase != nullptr ? phase : "");
    for (; i < j; ++i) {
      if (Status st = hooks[i]->after_step(s); !st) return st;
    }
  }
  return Status::Ok();
}

Status run_end(const HookList& hooks, int64_t step) {
  for (auto it = hooks.rbegin(); it != hooks.rend(); ++it) {
    if (Status st = (*it)->end(step); !st) return st;
  }
  return Status::Ok();
}

}  // namespace dtrain
