// Helpers shared by the coordination service and client (strategies/coordination_*.cpp);
// not part of the public API.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "strategies/coordination.hpp"
#include "strategies/coordination.pb.h"
#include "strategies/rpc_time.hpp"

namespace dtrain::coord_internal {

using Clock = std::chrono::steady_clock;

// A server-side long-poll (Register, Get, Barrier) answers after at most this
// long (or the heartbeat interval if shorter); the client then asks again.
constexpr std::chrono::milliseconds kMaxPoll{1000};

// The shared RPC time helpers (format_secs, grpc_time, ms_until, pause_connecting,
// to_duration, transport_failure).
using namespace rpc_time;
// options.heartbeat_secs, or timeout_secs / 10 clamped to [0.2, 5] when 0.
double heartbeat_interval(const CoordinationOptions& options);
// "a, b and c"
std::string join_labels(const std::vector<std::string>& labels);

void to_proto(const CoordTask& task, coord::Task* out);
CoordTask from_proto(const coord::Task& task);

}  // namespace dtrain::coord_internal
