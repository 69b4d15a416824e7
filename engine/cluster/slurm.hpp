// Slurm: the cluster of an `srun` step from SLURM_* variables, and Slurm's
// hostlist syntax ("node[01-03,07],gpu-a[1-2]").
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "engine/cluster/cluster.hpp"
#include "engine/base/status.hpp"

namespace dtrain {

// Expands a Slurm hostlist: comma-separated items, each a name with zero or
// more bracket groups of comma-separated numbers and lo-hi ranges. Zero padding
// is kept: the width of a range is that of its low bound ("[08-10]" -> 08 09 10).
// Several groups expand as their product, the first varying slowest
// ("rack[1-2]-node[1-2]" -> rack1-node1 rack1-node2 rack2-node1 rack2-node2).
// Errors (kConfig, naming `var`): unbalanced brackets, empty names or ranges,
// hi < lo, non-digits in a group, more than 65536 hosts.
Result<std::vector<std::string>> expand_hostlist(std::string_view list, const std::string& var);

// SLURM_TASKS_PER_NODE: "2(x3),1" -> {2, 2, 2, 1}.
Result<std::vector<int>> parse_tasks_per_node(std::string_view text, const std::string& var);

// The cluster of a Slurm step. Reads SLURM_PROCID, SLURM_NTASKS (or
// SLURM_STEP_NUM_TASKS inside a step), SLURM_LOCALID, SLURM_STEP_NODELIST
// (else SLURM_JOB_NODELIST), SLURM_STEP_TASKS_PER_NODE (else
// SLURM_TASKS_PER_NODE) and DTRAIN_PORT_BASE (default 23456). Ranks are laid
// out as Slurm's default block distribution: the first node's tasks, then the
// next's. Task r listens on its node's host at port base + its local id.
// Rank 0 is chief 0, rank r > 0 is worker r-1. A step whose SLURM_LOCALID does
// not match that layout (e.g. --distribution=cyclic) is refused.
// Call only when SLURM_PROCID is set.
Result<ResolvedCluster> slurm_cluster(const EnvLookup& env);

inline constexpr int kDefaultPortBase = 23456;

}  // namespace dtrain
