// dtrain server: a task that waits for work, as TensorFlow's standard server
// (run_standard_tensorflow_server). A client (`dtrain train JOB
// --remote-cluster ...`) reserves it for one task of a job, then has it run
// `dtrain train` with that task's TF_CONFIG; the output goes back to the
// client line by line. When the client goes away or is interrupted, the task
// is stopped; then the server waits for the next job.
#pragma once

#include <string>

namespace dtrain {

struct ServerArgs {
  std::string host = "0.0.0.0";  // address to listen on
  int port = 0;                  // 0: a free port, printed at start
  bool once = false;             // exit after the first job
  double stop_grace_secs = 30;   // after SIGTERM to a task, SIGKILL when it has not ended within this
};

int run_task_server(const ServerArgs& args);

}  // namespace dtrain
