// Error values for user-facing mistakes (job file, data, checkpoints) and the
// process exit codes they map to. Our own invariants use assert, not these.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace dtrain {

// Exit codes, documented in README and dtrain(1).
enum class ExitCode : int {
  kOk = 0,
  kFailure = 1,      // anything else: NaN loss, I/O failure writing outputs, ...
  kUsage = 2,        // bad command line or job file (config)
  kData = 3,         // bad data file or checkpoint contents
  kCluster = 4,      // a task of the cluster died, hung or never arrived
  kStopped = 75,     // stopped early by a signal, checkpoint saved: run the same command to resume
                     // (EX_TEMPFAIL of sysexits.h, "try again later")
};

// kStopped: not a failure; training stopped on request (SIGTERM, SIGINT,
// SIGUSR1) after saving a checkpoint.
enum class ErrorKind { kConfig, kData, kRuntime, kCluster, kStopped };

inline ExitCode exit_code_for(ErrorKind k) {
  switch (k) {
    case ErrorKind::kConfig: return ExitCode::kUsage;
    case ErrorKind::kData: return ExitCode::kData;
    case ErrorKind::kRuntime: return ExitCode::kFailure;
    case ErrorKind::kCluster: return ExitCode::kCluster;
    case ErrorKind::kStopped: return ExitCode::kStopped;
  }
  return ExitCode::kFailure;
}

// One user-facing error: `message` is the full line the user sees, already
// naming the file and place ("job.yaml:3:5: model.layers[0].units: ...").
struct Error {
  ErrorKind kind = ErrorKind::kRuntime;
  std::string message;
};

inline Error config_error(std::string m) { return {ErrorKind::kConfig, std::move(m)}; }
inline Error data_error(std::string m) { return {ErrorKind::kData, std::move(m)}; }
inline Error runtime_error(std::string m) { return {ErrorKind::kRuntime, std::move(m)}; }
inline Error cluster_error(std::string m) { return {ErrorKind::kCluster, std::move(m)}; }

// Result<T>: a value or an Error (std::expected is C++23; this is the subset we use).
template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}          // NOLINT: implicit by design
  Result(Error error) : v_(std::move(error)) {}      // NOLINT
  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  const Error& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

// Status: success or an Error.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error e) : e_(std::move(e)) {}  // NOLINT: implicit by design
  static Status Ok() { return {}; }
  bool ok() const { return !e_.has_value(); }
  explicit operator bool() const { return ok(); }
  const Error& error() const { return *e_; }

 private:
  std::optional<Error> e_;
};

// Thrown only to unwind from deep inside the training loop to the CLI edge,
// carrying an Error (e.g. a data error found by the prefetch thread).
struct ErrorException {
  Error error;
};

}  // namespace dtrain
