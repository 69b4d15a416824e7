// The per-phase table of a profiled window, from hand-made events whose sums
// are known: replica phases count their mean over the replica threads, the
// communication thread's all-reduce is a line of its own, and the rows of a
// step add up to it.
#include <doctest.h>

#include <fmt/format.h>

#include "estimator/profile_report.hpp"

using namespace dtrain;

namespace {

Profiler::Event ev(const char* phase, int tid, double begin_ms, double end_ms, int64_t step = 0) {
  Profiler::Event e;
  e.phase = phase;
  e.name = phase;
  e.tid = tid;
  e.step = step;
  e.begin_us = begin_ms * 1e3;
  e.dur_us = (end_ms - begin_ms) * 1e3;
  return e;
}

}  // namespace

TEST_CASE("profile_table: two replica threads, a communication thread, two steps") {
  std::vector<Profiler::Event> events;
  for (int s = 0; s < 2; ++s) {
    const double o = 100.0 * s;  // each step is 100 ms on the main thread (tid 0)
    events.push_back(ev("step", 0, o, o + 100, s));
    events.push_back(ev("input", 0, o, o + 10, s));
    events.push_back(ev("compute", 0, o + 10, o + 90, s));
    events.push_back(ev("summaries", 0, o + 90, o + 96, s));
    // Replica 0 (tid 1) and replica 1 (tid 2).
    events.push_back(ev("forward", 1, o + 11, o + 31, s));
    events.push_back(ev("forward", 2, o + 11, o + 41, s));  // mean forward: 25 ms
    events.push_back(ev("loss", 1, o + 41, o + 42, s));
    events.push_back(ev("loss", 2, o + 41, o + 42, s));
    events.push_back(ev("backward", 1, o + 42, o + 82, s));
    events.push_back(ev("backward", 2, o + 42, o + 72, s));  // mean backward: 35 ms
    events.push_back(ev("all-reduce", 2, o + 82, o + 84, s));  // in process, by the last to arrive: mean 1 ms
    events.push_back(ev("optimizer", 1, o + 84, o + 88, s));
    events.push_back(ev("optimizer", 2, o + 84, o + 88, s));
    events.push_back(ev("all-reduce", 3, o + 50, o + 70, s));  // across workers, on its own thread
  }
  const std::vector<std::string> lines = profile_table(events);
  REQUIRE(lines.size() == 17);
  CHECK(lines[0] == "phase                        total ms   ms/step   share");
  CHECK(lines[1] == "input wait                      20.00    10.000   10.0%");
  CHECK(lines[2] == "worker sync                      0.00     0.000    0.0%");
  CHECK(lines[3] == "forward                         50.00    25.000   25.0%");
  CHECK(lines[4] == "loss                             2.00     1.000    1.0%");
  CHECK(lines[5] == "backward                        70.00    35.000   35.0%");
  CHECK(lines[6] == "all-reduce (in process)          2.00     1.000    1.0%");
  CHECK(lines[7] == "ps pull and push                 0.00     0.000    0.0%");
  CHECK(lines[8] == "optimizer                        8.00     4.000    4.0%");
  // compute 80 ms a step, of which 25 + 1 + 35 + 1 + 4 = 66 are accounted.
  CHECK(lines[9] == "other compute                   28.00    14.000   14.0%");
  CHECK(lines[10] == "summaries                       12.00     6.000    6.0%");
  CHECK(lines[11] == "checkpoint                       0.00     0.000    0.0%");
  CHECK(lines[12] == "eval                             0.00     0.000    0.0%");
  CHECK(lines[13] == "other                            8.00     4.000    4.0%");
  CHECK(lines[14] == "step                           200.00   100.000  100.0%");
  CHECK(lines[15] ==
        "all-reduce across workers       40.00    20.000   20.0%  (communication thread, overlapped with backward)");
  CHECK(lines[16] == "forward, loss, backward, all-reduce (in process) and optimizer: mean over 2 replica threads");
}

TEST_CASE("profile_table: one_device computes on the main thread; no steps, no table") {
  std::vector<Profiler::Event> events = {ev("step", 0, 0, 10), ev("input", 0, 0, 1), ev("compute", 0, 1, 10),
                                         ev("forward", 0, 1, 4), ev("backward", 0, 4, 9), ev("optimizer", 0, 9, 10)};
  const std::vector<std::string> lines = profile_table(events);
  REQUIRE(lines.size() == 15);
  CHECK(lines[3] == "forward                          3.00     3.000   30.0%");
  CHECK(lines[9] == "other compute                    0.00     0.000    0.0%");
  CHECK(profile_table({}) == std::vector<std::string>{"no step was profiled"});
}

TEST_CASE("profile_table: parameter_server's pull and push on the main thread count whole") {
  // One replica thread (tid 1) besides the main thread: replica means are over 1.
  std::vector<Profiler::Event> events = {ev("step", 0, 0, 10), ev("compute", 0, 0, 10), ev("ps", 0, 0, 2),
                                         ev("forward", 1, 2, 6),  ev("backward", 1, 6, 9), ev("ps", 0, 9, 10)};
  const std::vector<std::string> lines = profile_table(events);
  CHECK(lines[7] == "ps pull and push                 3.00     3.000   30.0%");
  CHECK(lines[9] == "other compute                    0.00     0.000    0.0%");
}
