// The training loop's hook list (estimator/hooks/training_hook.hpp): the
// order of the calls, the shared profile span of one phase's hooks, an error
// ending the list, and StepState's arithmetic.
#include <doctest.h>

#include <memory>
#include <string>
#include <vector>

#include "estimator/hooks/training_hook.hpp"

namespace dtrain {
namespace {

// Records "<name>.<call>" in a shared log; fails after_step when told to.
class Recorder : public TrainingHook {
 public:
  Recorder(std::string name, std::vector<std::string>& log, const char* phase = nullptr, bool fail = false)
      : name_(std::move(name)), log_(log), phase_(phase), fail_(fail) {}
  const char* phase() const override { return phase_; }
  Status before_step(StepState&) override {
    log_.push_back(name_ + ".before");
    return Status::Ok();
  }
  Status after_step(StepState& s) override {
    log_.push_back(name_ + ".after");
    if (fail_) return runtime_error(name_ + " failed at step " + std::to_string(s.step));
    return Status::Ok();
  }
  Status end(int64_t step) override {
    log_.push_back(name_ + ".end " + std::to_string(step));
    return Status::Ok();
  }

 private:
  std::string name_;
  std::vector<std::string>& log_;
  const char* phase_;
  bool fail_;
};

TEST_CASE("training hooks: before and after in the list's order, end in reverse") {
  std::vector<std::string> log;
  HookList hooks;
  for (const char* n : {"a", "b", "c"}) hooks.push_back(std::make_unique<Recorder>(n, log));
  StepState s;
  REQUIRE(run_before_step(hooks, s).ok());
  REQUIRE(run_after_step(hooks, s).ok());
  REQUIRE(run_end(hooks, 7).ok());
  CHECK(log == std::vector<std::string>{"a.before", "b.before", "c.before", "a.after", "b.after", "c.after",
                                        "c.end 7", "b.end 7", "a.end 7"});
}

TEST_CASE("training hooks: an error in after_step ends the list with that error") {
  std::vector<std::string> log;
  HookList hooks;
  hooks.push_back(std::make_unique<Recorder>("a", log));
  hooks.push_back(std::make_unique<Recorder>("b", log, nullptr, /*fail=*/true));
  hooks.push_back(std::make_unique<Recorder>("c", log));
  StepState s;
  s.step = 12;
  Status st = run_after_step(hooks, s);
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().message == "b failed at step 12");
  CHECK(log == std::vector<std::string>{"a.after", "b.after"});
}

TEST_CASE("training hooks: consecutive hooks of one phase share one profile span") {
  std::vector<std::string> log;
  HookList hooks;
  hooks.push_back(std::make_unique<Recorder>("nan", log));
  hooks.push_back(std::make_unique<Recorder>("log", log, "summaries"));
  hooks.push_back(std::make_unique<Recorder>("summary", log, "summaries"));
  hooks.push_back(std::make_unique<Recorder>("stop", log));
  hooks.push_back(std::make_unique<Recorder>("other", log, "summaries"));
  Profiler profiler;
  StepState s;
  s.profiler = &profiler;
  REQUIRE(run_after_step(hooks, s).ok());
  std::vector<std::string> phases;
  for (const Profiler::Event& e : profiler.events()) phases.push_back(e.phase);
  // One span for log + summary, another for the later hook of that phase;
  // none for the hooks without a phase.
  CHECK(phases == std::vector<std::string>{"summaries", "summaries"});
  // Without a profiler nothing is recorded, and the hooks still run.
  log.clear();
  s.profiler = nullptr;
  REQUIRE(run_after_step(hooks, s).ok());
  CHECK(log.size() == 5);
}

TEST_CASE("training hooks: StepState's crossings count multiples passed, for steps that jump") {
  StepState s;
  s.max_steps = 100;
  s.step_before = 9;
  s.step = 10;
  CHECK(s.crossed(5));
  CHECK(s.crossed(10));
  CHECK_FALSE(s.crossed(3));
  CHECK_FALSE(s.crossed(0));
  CHECK_FALSE(s.last());
  CHECK_FALSE(s.ends());
  // Asynchronous parameter servers: the step jumps past a multiple.
  s.step_before = 98;
  s.step = 103;
  CHECK(s.crossed(100));
  CHECK(s.last());
  CHECK(s.ends());
  s.step = 50;
  s.step_before = 49;
  s.stop_signal = -1;
  CHECK(s.ends());
  s.stop_signal = 0;
  s.early_stop = true;
  CHECK(s.ends());
}

}  // namespace
}  // namespace dtrain
