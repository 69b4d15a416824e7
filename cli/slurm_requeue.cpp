// Requeueing a Slurm batch job with scontrol after a SIGUSR1 stop.
#include "cli/slurm_requeue.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <vector>

#include "strategies/child_process.hpp"

namespace dtrain::cli {

namespace {

// scontrol waits for slurmctld (MessageTimeout, 10 s by default, with retries).
constexpr double kScontrolTimeoutSecs = 60;

// A job id scontrol takes: digits, or an array task's "123_4".
bool valid_job_id(const std::string& id) {
  const size_t us = id.find('_');
  const auto digits = [](std::string_view s) {
    return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
  };
  return us == std::string::npos ? digits(id) : digits(std::string_view(id).substr(0, us)) &&
                                                    digits(std::string_view(id).substr(us + 1));
}

// The first line of scontrol's stderr (else stdout), trimmed, for a message.
std::string first_line(const CommandOutput& out) {
  std::string text = out.err.find_first_not_of(" \n") != std::string::npos ? out.err : out.out;
  text.erase(0, text.find_first_not_of(" \n"));
  text = text.substr(0, text.find('\n'));
  return text.empty() ? std::string("no output") : text;
}

std::string outcome(const CommandOutput& out) {
  return out.exit_code == 124 ? fmt::format("did not answer in {:.0f} s", kScontrolTimeoutSecs)
                              : fmt::format("exited with {}: {}", out.exit_code, first_line(out));
}

}  // namespace

std::map<std::string, std::string> parse_scontrol_fields(std::string_view text) {
  std::map<std::string, std::string> fields;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    size_t end = i;
    while (end < text.size() && !std::isspace(static_cast<unsigned char>(text[end]))) ++end;
    const std::string_view field = text.substr(i, end - i);
    const size_t eq = field.find('=');
    if (eq != std::string_view::npos && eq > 0) fields.emplace(field.substr(0, eq), field.substr(eq + 1));
    i = end;
  }
  return fields;
}

std::string requeue_refusal(std::optional<bool> policy, const std::map<std::string, std::string>& fields) {
  if (policy) return *policy ? "" : "run.slurm_requeue is false";
  const auto get = [&](const char* key) {
    auto it = fields.find(key);
    return it == fields.end() ? std::string("?") : it->second;
  };
  if (get("BatchFlag") != "1") {
    return "it is not a batch job (srun or salloc outside sbatch; BatchFlag=" + get("BatchFlag") + ")";
  }
  if (get("Requeue") != "1") {
    return "it may not be requeued (Requeue=" + get("Requeue") +
           "; submit it with sbatch --requeue, or set run.slurm_requeue: true)";
  }
  return "";
}

std::pair<std::string, bool> requeue_slurm_job(std::optional<bool> policy, const std::string& checkpoint,
                                               const EnvLookup& env) {
  const std::optional<std::string> job_id = env("SLURM_JOB_ID");
  if (!job_id || job_id->empty()) return {"", false};
  if (!valid_job_id(*job_id)) {
    return {fmt::format("Slurm job not requeued: SLURM_JOB_ID is \"{}\", not a job id", *job_id), true};
  }
  const std::string& id = *job_id;
  std::map<std::string, std::string> fields;
  if (!policy) {  // auto: ask Slurm whether the job is a batch job that may be requeued
    auto shown = run_command({"scontrol", "show", "job", "-o", id}, kScontrolTimeoutSecs);
    if (!shown || shown->exit_code != 0) {
      return {fmt::format("Slurm job {} not requeued: cannot tell whether it may be (scontrol show job {} {}); "
                          "set run.slurm_requeue: true to requeue without asking; it resumes from {} when started "
                          "again",
                          id, id, shown ? outcome(*shown) : shown.error().message, checkpoint),
              true};
    }
    fields = parse_scontrol_fields(shown->out);
  }
  if (std::string why = requeue_refusal(policy, fields); !why.empty()) {
    return {fmt::format("Slurm job {} not requeued: {}", id, why), false};
  }
  auto requeued = run_command({"scontrol", "requeue", id}, kScontrolTimeoutSecs);
  if (!requeued || requeued->exit_code != 0) {
    return {fmt::format("could not requeue Slurm job {}: scontrol requeue {} {}; submit the job again to resume "
                        "from {}",
                        id, id, requeued ? outcome(*requeued) : requeued.error().message, checkpoint),
            true};
  }
  return {fmt::format("requeued Slurm job {} (scontrol requeue); it resumes from {}", id, checkpoint), false};
}

}  // namespace dtrain::cli
