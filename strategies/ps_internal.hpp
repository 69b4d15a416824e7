// Helpers shared by the parameter service and its client (strategies/ps_*.cpp):
// tensors to and from their wire form (little-endian float32 bytes), clocks.
// Not part of the public API.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "engine/base/status.hpp"
#include "engine/tensor.hpp"
#include "strategies/parameter_server.pb.h"
#include "strategies/rpc_time.hpp"

namespace dtrain::ps_internal {

using Clock = std::chrono::steady_clock;

// A call that waits (for init or a step) is answered after at most this long;
// the client then calls again until its own deadline.
constexpr std::chrono::milliseconds kMaxPoll{1000};

// Writes t (an empty Tensor as `absent`); returns the payload bytes written.
int64_t to_proto(const Tensor& t, ps::Tensor* out);
// The tensor, or an error (a data size that does not match the shape).
Result<Tensor> from_proto(const ps::Tensor& t);
// Copies the payload of t into dst (same numel; REQUIRES: checked by the caller).
void copy_payload(const ps::Tensor& t, Tensor& dst);
int64_t payload_bytes(const ps::Tensor& t);

// The shared RPC time helpers (format_secs, grpc_time, ms_until, pause_connecting,
// to_duration, transport_failure).
using namespace rpc_time;

}  // namespace dtrain::ps_internal
