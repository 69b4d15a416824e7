// Helpers shared by the coordination service and client (strategies/coordination_*.cpp);
// not part of the public API.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "strategies/coordination.hpp"
#include "strategies/coordination.pb.h"

namespace dtrain::coord_internal {

using Clock = std::chrono::steady_clock;

// A server-side long-poll (Register, Get, Barrier) answers after at most this
// long (or the heartbeat interval if shorter); the client then asks again.
constexpr std::chrono::milliseconds kMaxPoll{1000};

// Seconds as written in messages: 60 -> "60", 1.5 -> "1.5".
std::string format_secs(double secs);
Clock::duration to_duration(double secs);
// Milliseconds left until `deadline`, at least 0.
int64_t ms_until(Clock::time_point deadline);
// The same instant on the system clock, which is the only one gRPC deadlines take.
std::chrono::system_clock::time_point grpc_time(Clock::time_point t);
// options.heartbeat_secs, or timeout_secs / 10 clamped to [0.2, 5] when 0.
double heartbeat_interval(const CoordinationOptions& options);
// "a, b and c"
std::string join_labels(const std::vector<std::string>& labels);

void to_proto(const CoordTask& task, coord::Task* out);
CoordTask from_proto(const coord::Task& task);

}  // namespace dtrain::coord_internal
