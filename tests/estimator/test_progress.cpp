// The progress line's arithmetic (estimator/hooks/progress_hook.hpp,
// estimator/logger.hpp): the rate over the recent past, the ETA it gives,
// and how durations and the lines read.
#include <doctest.h>

#include <cstdio>
#include <string>

#include "estimator/hooks/progress_hook.hpp"
#include "estimator/logger.hpp"

namespace dtrain {
namespace {

TEST_CASE("progress: the ETA comes from the rate over the newest half of the run") {
  RateWindow w(/*min_horizon=*/10.0);
  CHECK(w.eta(100) < 0);  // nothing yet
  w.add(0.0, 1, 32);
  CHECK(w.eta(100) < 0);  // one sample: no rate
  w.add(0.2, 3, 96);
  CHECK(w.eta(100) < 0);  // less than half a second: not yet
  // 10 steps a second for 40 s.
  for (int i = 1; i <= 400; ++i) w.add(0.2 + 0.1 * i, 3 + i, 32 * (3 + i));
  CHECK(w.steps_per_sec() == doctest::Approx(10.0));
  CHECK(w.examples_per_sec() == doctest::Approx(320.0));
  CHECK(w.eta(1403) == doctest::Approx(100.0));  // 1000 steps left at 10/s
  // Then 5 steps a second: after 20 s the window (half of the 60 s run,
  // 30 s) holds 10 s at 10/s and 20 s at 5/s: 200 steps in 30 s.
  const double t0 = 40.2;
  int64_t step = 403;
  for (int i = 1; i <= 100; ++i) w.add(t0 + 0.2 * i, ++step, 32 * step);
  CHECK(w.steps_per_sec() == doctest::Approx(200.0 / 30.0).epsilon(0.02));
  CHECK(w.eta(step) == 0);  // done
}

TEST_CASE("progress: a pause (an evaluation) counts at its share of the window") {
  RateWindow w(10.0);
  int64_t step = 0;
  double t = 0;
  for (int i = 0; i < 100; ++i) w.add(t += 0.1, ++step, step);  // 10 steps/s for 10 s
  w.add(t += 5.0, ++step, step);                                // a 5 s evaluation, then one step
  // The window is the newest 10 s: 5 s at 10 steps/s, then the pause: 51
  // steps in 10 s. The rate halves; it does not drop to the last step's 0.2/s.
  CHECK(w.steps_per_sec() == doctest::Approx(5.1).epsilon(0.03));
}

TEST_CASE("progress: durations read as a person writes them") {
  CHECK(format_duration(-1) == "--");
  CHECK(format_duration(0.4) == "0s");
  CHECK(format_duration(42) == "42s");
  CHECK(format_duration(185) == "3m05s");
  CHECK(format_duration(3720) == "1h02m");
}

TEST_CASE("progress: plain lines carry the ETA; the live line is for terminals only") {
  std::FILE* f = std::tmpfile();
  REQUIRE(f != nullptr);
  Logger log(LogFormat::kAuto, f);  // a file, not a terminal
  CHECK_FALSE(log.is_live());
  log.progress({5, 10, 100, 0.5, 3});  // not drawn off a terminal
  log.status("loading data.train (idx)");
  log.step({50, 200, 0.25, 0.01, 10, 320, 0, 15});
  log.step({1, 200, 0.25, 0.01, 10, 320, 0, -1});
  std::rewind(f);
  char buf[512] = {};
  const size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  CHECK(std::string(buf, n) ==  // no status line in plain logs: an error stays one line
        "step 50/200  loss 0.2500  lr 0.01  10.0 steps/s  320 examples/s  input wait 0.0%  ETA 15s\n"
        "step 1/200  loss 0.2500  lr 0.01  10.0 steps/s  320 examples/s  input wait 0.0%  ETA --\n");
}

}  // namespace
}  // namespace dtrain
