// Placement of variables on ps tasks: greedy by bytes and dimension-0 partitioning.
#include <doctest.h>

#include "strategies/ps_placement.hpp"

namespace dtrain {
namespace {

VariableSpec var(const char* name, Shape shape) {
  VariableSpec v;
  v.name = name;
  v.shape = std::move(shape);
  return v;
}

TEST_CASE("ps placement: largest first onto the least loaded task") {
  // 400, 100, 300 and 200 floats: 400 -> ps0, 300 -> ps1, 200 -> ps1 (300 < 400), 100 -> ps0 (400 < 500).
  const std::vector<VariableSpec> vars = {var("a", {400}), var("b", {100}), var("c", {3, 100}), var("d", {200})};
  const PsPlacement p = place_variables(vars, 2, 1, 1.0);
  REQUIRE(p.pieces.size() == 4);
  CHECK(p.pieces[0].ps == 0);
  CHECK(p.pieces[2].ps == 1);
  CHECK(p.pieces[3].ps == 1);
  CHECK(p.pieces[1].ps == 0);
  CHECK(p.ps_bytes == std::vector<int64_t>{2000, 2000});
  CHECK(p.by_ps[0] == std::vector<size_t>{0, 1});
  CHECK(p.by_ps[1] == std::vector<size_t>{2, 3});
}

TEST_CASE("ps placement: partition splits dimension 0, never two shards of a variable on one task") {
  const std::vector<VariableSpec> vars = {var("kernel", {10, 64}), var("bias", {64})};
  SUBCASE("max_shards 3 over 3 ps: 4, 3 and 3 rows") {
    const PsPlacement p = place_variables(vars, 3, 3, 256.0);
    REQUIRE(p.pieces.size() == 4);  // bias: 256 B / 256 = 1 shard
    CHECK(p.pieces[0].row_begin == 0);
    CHECK(p.pieces[0].row_end == 4);
    CHECK(p.pieces[1].row_begin == 4);
    CHECK(p.pieces[1].row_end == 7);
    CHECK(p.pieces[2].row_end == 10);
    CHECK(p.pieces[0].ps != p.pieces[1].ps);
    CHECK(p.pieces[1].ps != p.pieces[2].ps);
    CHECK(p.pieces[0].ps != p.pieces[2].ps);
    CHECK(p.pieces[0].bytes == 4 * 64 * 4);
  }
  SUBCASE("min_shard_bytes limits the shard count") {
    const PsPlacement p = place_variables(vars, 4, 8, 1024.0);  // kernel 2560 B -> 2 shards
    CHECK(p.pieces.size() == 3);
  }
  SUBCASE("more shards than rows or tasks are never made") {
    const PsPlacement p = place_variables({var("v", {2, 1000})}, 2, 16, 1.0);
    CHECK(p.pieces.size() == 2);
  }
}

}  // namespace
}  // namespace dtrain
