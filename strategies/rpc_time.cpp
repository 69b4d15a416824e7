// Time helpers of the gRPC services.
#include "strategies/rpc_time.hpp"

#include <fmt/format.h>
#include <grpcpp/channel.h>
#include <grpcpp/support/status.h>

#include <algorithm>

namespace dtrain::rpc_time {

std::string format_secs(double secs) { return fmt::format("{:g}", secs); }

Clock::duration to_duration(double secs) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(secs));
}

int64_t ms_until(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return std::max<int64_t>(left, 0);
}

std::chrono::system_clock::time_point grpc_time(Clock::time_point t) {
  return std::chrono::system_clock::now() +
         std::chrono::duration_cast<std::chrono::system_clock::duration>(t - Clock::now());
}

double default_heartbeat_secs(double timeout_secs) { return std::clamp(timeout_secs / 10, 0.2, 5.0); }

bool transport_failure(const grpc::Status& s) {
  return s.error_code() == grpc::StatusCode::UNAVAILABLE || s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED ||
         s.error_code() == grpc::StatusCode::CANCELLED;
}

void pause_connecting(grpc::Channel& channel, Clock::duration pause) {
  const Clock::time_point until = Clock::now() + pause;
  while (Clock::now() < until) {
    grpc_connectivity_state state = channel.GetState(/*try_to_connect=*/true);
    if (state == GRPC_CHANNEL_READY) return;
    channel.WaitForStateChange(state, grpc_time(until));
  }
}

}  // namespace dtrain::rpc_time
