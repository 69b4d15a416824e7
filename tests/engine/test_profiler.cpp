// The profiler: one track per thread (first name wins), events with the step
// they belong to, nothing recorded through a null profiler, and the Chrome
// trace file (Trace Event Format) it writes.
#include <doctest.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <fstream>
#include <future>
#include <thread>

#include "engine/profiler.hpp"
#include "tests/engine/io/io_test_util.hpp"

using namespace dtrain;
using dtrain::testing::TempDir;

TEST_CASE("profiler: one named track per thread, events carry their step, and scopes nest") {
  Profiler p;
  p.name_thread("main");
  p.name_thread("ignored: the first name wins");
  p.set_step(7);
  {
    const ProfileScope outer(&p, "step");
    {
      const ProfileScope inner(&p, "forward", "dense");
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
  // Both threads stay alive until both recorded: a finished thread's id may be reused.
  std::promise<void> recorded;
  std::shared_future<void> done = recorded.get_future().share();
  std::thread other([&] {
    p.name_thread("replica 1");
    { const ProfileScope s(&p, "backward", "conv2d"); }
    done.wait();
  });
  while (p.events().size() < 3) std::this_thread::yield();
  std::thread unnamed([&] { const ProfileScope s(&p, "all-reduce"); });
  unnamed.join();
  recorded.set_value();
  other.join();
  {
    const ProfileScope off(nullptr, "step", "never recorded");
  }

  const auto events = p.events();
  REQUIRE(events.size() == 4);
  // Destruction order: the inner scope ends first.
  CHECK(events[0].name == "forward dense");
  CHECK(events[0].phase == "forward");
  CHECK(events[1].name == "step");
  CHECK(events[0].step == 7);
  CHECK(events[0].tid == 0);
  CHECK(events[1].tid == 0);
  CHECK(events[0].dur_us >= 2000);
  CHECK(events[1].begin_us <= events[0].begin_us);
  CHECK(events[0].begin_us + events[0].dur_us <= events[1].begin_us + events[1].dur_us);
  CHECK(events[2].name == "backward conv2d");
  CHECK(events[2].tid == 1);
  CHECK(events[3].tid == 2);
  CHECK(p.thread_names() == std::vector<std::string>{"main", "replica 1", "thread 2"});
}

TEST_CASE("profiler: the Chrome trace holds X events in microseconds and a name for every track") {
  Profiler p;
  p.name_thread("main");
  p.set_step(3);
  const auto t0 = Profiler::Clock::now();
  p.add("input", "wait", t0, t0 + std::chrono::microseconds(1500));
  TempDir dir;
  const std::string path = dir.path() + "/trace.json";
  REQUIRE(p.write_chrome_trace(path, "dtrain train", 1).ok());
  std::ifstream in(path);
  const nlohmann::json trace = nlohmann::json::parse(in);
  CHECK(trace["displayTimeUnit"] == "ms");
  const auto& events = trace["traceEvents"];
  REQUIRE(events.size() == 4);  // process_name, thread_name, thread_sort_index, the event
  CHECK(events[0]["ph"] == "M");
  CHECK(events[0]["args"]["name"] == "dtrain train");
  CHECK(events[1]["name"] == "thread_name");
  CHECK(events[1]["args"]["name"] == "main");
  const auto& x = events[3];
  CHECK(x["ph"] == "X");
  CHECK(x["name"] == "input wait");
  CHECK(x["cat"] == "input");
  CHECK(x["pid"] == 1);
  CHECK(x["tid"] == 0);
  CHECK(x["dur"].get<double>() == doctest::Approx(1500.0));
  CHECK(x["ts"].get<double>() >= 0);
  CHECK(x["args"]["step"] == 3);
}
