// Misuse reports of the op dispatch, and the host context.
#include "engine/ops/dispatch.hpp"

#include <cstdio>
#include <cstdlib>

namespace dtrain::ops {

const Context& host_context() {
  static const Context c;
  return c;
}

void wrong_device(const char* op, const Tensor& t, const Device& expected) {
  std::fprintf(stderr, "dtrain: internal error: op %s on %s was given a %s tensor %s on %s (transfers are explicit)\n",
               op, expected.str().c_str(), dtype_name(t.dtype()), shape_str(t.shape()).c_str(),
               t.device().str().c_str());
  std::abort();
}

void no_backend(const char* op, const Device& d) {
  std::fprintf(stderr, "dtrain: internal error: op %s has no backend for %s in this dtrain\n", op, d.str().c_str());
  std::abort();
}

}  // namespace dtrain::ops
