// Time helpers shared by dtrain's gRPC services (coordination, parameter
// service): deadlines on the steady clock, converted for gRPC, and seconds
// as written in messages.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

namespace grpc {
class Channel;
class Status;
}  // namespace grpc

namespace dtrain::rpc_time {

using Clock = std::chrono::steady_clock;

// Seconds as written in messages: 60 -> "60", 1.5 -> "1.5".
std::string format_secs(double secs);
Clock::duration to_duration(double secs);
// Milliseconds left until `deadline`, at least 0.
int64_t ms_until(Clock::time_point deadline);
// The same instant on the system clock, which is the only one gRPC deadlines take.
std::chrono::system_clock::time_point grpc_time(Clock::time_point t);
// The heartbeat interval of a cluster with this timeout: timeout / 10
// clamped to [0.2, 5] s.
double default_heartbeat_secs(double timeout_secs);

// The call did not reach the service or got no answer in time (as opposed to
// an answer that refuses it).
bool transport_failure(const grpc::Status& s);
// Waits `pause` between attempts at a call the channel could not deliver,
// asking it to connect and watching its state meanwhile. Watching is what
// moves a connection attempt forward: a process that only sleeps leaves its
// handshake to gRPC's backup poller, which runs every 5 s.
void pause_connecting(grpc::Channel& channel, Clock::duration pause);

}  // namespace dtrain::rpc_time
