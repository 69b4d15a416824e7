// Where the parameter_server strategy keeps each variable: shards along
// dimension 0 (strategy.partition) spread over the ps tasks greedily by
// bytes, largest first onto the least loaded task (TensorFlow's
// GreedyLoadBalancingStrategy).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/model/model.hpp"

namespace dtrain {

struct PsPiece {
  size_t var = 0;                     // index into the model's variables
  int64_t row_begin = 0, row_end = 0; // rows along dimension 0 (1 row for a scalar)
  int64_t bytes = 0;
  int ps = 0;                         // the ps task holding it
};

struct PsPlacement {
  std::vector<PsPiece> pieces;           // variable order, a variable's shards in row order
  std::vector<std::vector<size_t>> by_ps;  // ps task -> its pieces (indices into pieces), in pieces order
  std::vector<int64_t> ps_bytes;           // bytes held by each ps task
};

// Rows of dimension 0 of a variable (1 for a scalar).
int64_t variable_rows(const Shape& shape);

// A variable of B bytes and R rows gets n = min(max_shards, num_ps, R,
// max(1, floor(B / min_shard_bytes))) shards of nearly equal rows; then every
// piece, largest first (ties: variable order), goes to the ps task with the
// fewest bytes so far (ties: the lowest index). Two shards of one variable
// never share a task. REQUIRES: num_ps >= 1, max_shards >= 1.
PsPlacement place_variables(const std::vector<VariableSpec>& vars, int num_ps, int64_t max_shards,
                            double min_shard_bytes);

// The start-up table: variable, shard rows, shape, bytes, ps task.
std::string format_placement(const PsPlacement& p, const std::vector<VariableSpec>& vars,
                             const std::vector<std::string>& ps_addresses);

}  // namespace dtrain
