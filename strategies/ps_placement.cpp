// Greedy placement of variable shards on ps tasks.
#include "strategies/ps_placement.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "strategies/strategy.hpp"

namespace dtrain {

int64_t variable_rows(const Shape& shape) { return shape.empty() ? 1 : shape[0]; }

PsPlacement place_variables(const std::vector<VariableSpec>& vars, int num_ps, int64_t max_shards,
                            double min_shard_bytes) {
  PsPlacement p;
  for (size_t v = 0; v < vars.size(); ++v) {
    const int64_t rows = variable_rows(vars[v].shape);
    const int64_t bytes = num_elements(vars[v].shape) * static_cast<int64_t>(sizeof(float));
    const int64_t by_size = std::max<int64_t>(1, static_cast<int64_t>(static_cast<double>(bytes) / min_shard_bytes));
    const int64_t n = std::max<int64_t>(1, std::min({max_shards, static_cast<int64_t>(num_ps), rows, by_size}));
    const int64_t row_bytes = rows > 0 ? bytes / rows : 0;
    for (const auto& [begin, end] : split_batch(rows, static_cast<int>(n))) {
      p.pieces.push_back({v, begin, end, (end - begin) * row_bytes, 0});
    }
  }
  std::vector<size_t> order(p.pieces.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return p.pieces[a].bytes > p.pieces[b].bytes; });
  p.ps_bytes.assign(static_cast<size_t>(num_ps), 0);
  std::vector<std::vector<size_t>> vars_on(static_cast<size_t>(num_ps));  // variables each task holds a shard of
  for (size_t i : order) {
    PsPiece& piece = p.pieces[i];
    int best = -1;
    for (int t = 0; t < num_ps; ++t) {
      const auto& held = vars_on[static_cast<size_t>(t)];
      if (std::find(held.begin(), held.end(), piece.var) != held.end()) continue;
      if (best < 0 || p.ps_bytes[static_cast<size_t>(t)] < p.ps_bytes[static_cast<size_t>(best)]) best = t;
    }
    piece.ps = best;
    p.ps_bytes[static_cast<size_t>(best)] += piece.bytes;
    vars_on[static_cast<size_t>(best)].push_back(piece.var);
  }
  p.by_ps.resize(static_cast<size_t>(num_ps));
  for (size_t i = 0; i < p.pieces.size(); ++i) p.by_ps[static_cast<size_t>(p.pieces[i].ps)].push_back(i);
  return p;
}

std::string format_placement(const PsPlacement& p, const std::vector<VariableSpec>& vars,
                             const std::vector<std::string>& ps_addresses) {
  std::string out = "placement (variable, rows, shape, bytes, ps task):";
  for (const PsPiece& piece : p.pieces) {
    const VariableSpec& v = vars[piece.var];
    Shape shape = v.shape;
    if (!shape.empty()) shape[0] = piece.row_end - piece.row_begin;
    out += fmt::format("\n  {}  rows {}..{}  {}  {} B  ps {} ({})", v.name, piece.row_begin, piece.row_end,
                       shape_str(shape), piece.bytes, piece.ps, ps_addresses[static_cast<size_t>(piece.ps)]);
  }
  for (size_t t = 0; t < p.ps_bytes.size(); ++t) {
    out += fmt::format("\n  ps {} holds {} B", t, p.ps_bytes[t]);
  }
  return out;
}

}  // namespace dtrain
