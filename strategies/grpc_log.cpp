// See grpc_log.hpp.
#include "strategies/grpc_log.hpp"

#include <grpc/support/log.h>

#include <cstdio>
#include <cstdlib>

namespace dtrain {
namespace {

void print_grpc_line(gpr_log_func_args* args) {
  std::fprintf(stderr, "dtrain: grpc: %s (%s:%d)\n", args->message, args->file, args->line);
}

void drop_grpc_line(gpr_log_func_args*) {}

}  // namespace

void route_grpc_logs() {
  const char* verbosity = std::getenv("GRPC_VERBOSITY");
  gpr_set_log_function(verbosity != nullptr && *verbosity != '\0' ? print_grpc_line : drop_grpc_line);
}

}  // namespace dtrain
