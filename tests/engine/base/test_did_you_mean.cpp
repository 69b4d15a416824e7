// Edit distance and "did you mean" suggestions.
#include <doctest.h>

#include "engine/base/did_you_mean.hpp"

namespace dtrain {
namespace {

TEST_CASE("did_you_mean: edit distance counts insertions, deletions, substitutions and adjacent swaps") {
  CHECK(edit_distance("", "") == 0);
  CHECK(edit_distance("", "abc") == 3);
  CHECK(edit_distance("abc", "") == 3);
  CHECK(edit_distance("kitten", "sitting") == 3);
  CHECK(edit_distance("mirorred", "mirrored") == 1);  // one swap
  CHECK(edit_distance("unts", "units") == 1);
  CHECK(edit_distance("dence", "dense") == 1);
  CHECK(edit_distance("ca", "abc") == 3);              // optimal string alignment, not full Damerau
  CHECK(edit_distance("learning_rate", "lerning_rate") == 1);
}

TEST_CASE("did_you_mean: suggests the closest candidate within two edits") {
  const std::vector<std::string> types = {"dense", "conv2d", "max_pool2d", "avg_pool2d", "flatten"};
  CHECK(closest_match("dence", types) == std::optional<std::string>("dense"));
  CHECK(closest_match("conv_2d", types) == std::optional<std::string>("conv2d"));
  CHECK(closest_match("maxpool2d", types) == std::optional<std::string>("max_pool2d"));
  CHECK_FALSE(closest_match("lstm", types).has_value());
  CHECK_FALSE(closest_match("dense", types).has_value());  // exact: nothing to suggest
}

TEST_CASE("did_you_mean: short words need closer matches, ties go to the earlier candidate") {
  CHECK_FALSE(closest_match("ps", {"lr"}).has_value());
  CHECK_FALSE(closest_match("a", {"b"}).has_value());
  CHECK(closest_match("sgdd", {"sgd", "adam"}) == std::optional<std::string>("sgd"));
  CHECK(closest_match("ab", {"ac", "ad"}) == std::optional<std::string>("ac"));  // both 1 edit away
  CHECK_FALSE(closest_match("ab", {"cd"}).has_value());                          // 2 letters: at most 1 edit
}

TEST_CASE("did_you_mean: the message suffix") {
  CHECK(did_you_mean("mirorred", {"one_device", "mirrored"}) == " (did you mean \"mirrored\"?)");
  CHECK(did_you_mean("xyz", {"one_device", "mirrored"}).empty());
}

}  // namespace
}  // namespace dtrain
