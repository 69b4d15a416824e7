// A gRPC handler's body, run so that nothing it throws reaches gRPC's own
// catch-all (which answers "Unexpected error in RPC handling" and names
// nothing): an exception becomes an INTERNAL status whose message names the
// service and the call, and what was thrown (engine/thread_errors.hpp). The
// caller's client turns it into its cluster error as for any failed call.
#pragma once

#include <grpcpp/grpcpp.h>

#include <string>

#include "engine/thread_errors.hpp"

namespace dtrain {

// `where`: "parameter service push"; also the DTRAIN_TEST_THROW boundary.
template <class Body>
grpc::Status guarded_rpc(const std::string& where, Body&& body) {
  try {
    maybe_throw_for_test(where);
    return body();
  } catch (...) {
    return grpc::Status(grpc::StatusCode::INTERNAL, current_exception_error(where).message);
  }
}

}  // namespace dtrain
