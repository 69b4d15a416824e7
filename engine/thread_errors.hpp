// Exceptions at thread boundaries: every thread dtrain starts (replica
// workers, input threads, the all-reduce thread, the coordination heartbeat
// and monitor, the remote client's readers) and every gRPC handler
// (strategies/rpc_guard.hpp) catches whatever its work throws and hands it,
// as an Error, to whoever waits on it, so that no exception reaches
// std::terminate. And the test hook that injects a throw at a named boundary.
#pragma once

#include <string_view>

#include "engine/base/status.hpp"

namespace dtrain {

// The exception being handled (call inside a catch block) as an Error:
// ErrorException keeps its kind and message; dnnl::error, std::bad_alloc,
// other std::exception and anything else become runtime errors (exit code 1,
// "<where>: <what>")
// naming `where` ("replica 1", "input pipeline") and what was thrown.
Error current_exception_error(std::string_view where);

// Test hook: when DTRAIN_TEST_THROW=<boundary>[:std|:unknown] names
// `boundary`, throws there (ErrorException by default, std::runtime_error with
// :std, an int with :unknown). Read once; a no-op otherwise.
void maybe_throw_for_test(std::string_view boundary);

// Test hook: when DTRAIN_TEST_PAUSE=<where>[:ms][,<where>[:ms]...] names
// `where` ("checkpoint write", "evaluation", "all_reduce", "ps push"), prints
// "dtrain: test pause: <where>" to stderr and sleeps there (default 200 ms),
// so that a test can send a signal while the process is at that point (the
// stop-signal stress test). Read once; a no-op otherwise.
void maybe_pause_for_test(std::string_view where);

}  // namespace dtrain
