// CoordTask naming and the small helpers shared by the coordination service
// and client.
#include <fmt/format.h>

#include <algorithm>

#include "strategies/coordination_internal.hpp"

namespace dtrain {

std::string CoordTask::id() const { return fmt::format("{} {}", type, index); }

std::string CoordTask::label() const { return address.empty() ? id() : fmt::format("{} ({})", id(), address); }

namespace coord_internal {

double heartbeat_interval(const CoordinationOptions& options) {
  if (options.heartbeat_secs > 0) return options.heartbeat_secs;
  return rpc_time::default_heartbeat_secs(options.timeout_secs);
}

std::string join_labels(const std::vector<std::string>& labels) {
  std::string out;
  for (size_t i = 0; i < labels.size(); ++i) {
    if (i > 0) out += i + 1 == labels.size() ? " and " : ", ";
    out += labels[i];
  }
  return out;
}

void to_proto(const CoordTask& task, coord::Task* out) {
  out->set_type(task.type);
  out->set_index(task.index);
  out->set_address(task.address);
}

CoordTask from_proto(const coord::Task& task) { return CoordTask{task.type(), task.index(), task.address()}; }

}  // namespace coord_internal
}  // namespace dtrain
