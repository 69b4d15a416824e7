// gRPC's own log lines (a bind failure prints ~1,500 characters of nested
// error detail before dtrain's one clear message): dropped, since every
// failure of a call dtrain makes reaches the user as dtrain's located error,
// unless GRPC_VERBOSITY is set, when they are printed as one line each,
// prefixed "dtrain: grpc:", to help debug gRPC itself.
#pragma once

namespace dtrain {

// Call once at start-up, before any gRPC use.
void route_grpc_logs();

}  // namespace dtrain
