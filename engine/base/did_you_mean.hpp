// "Did you mean" suggestions for unknown keys, enum values and layer types,
// all from one edit-distance helper.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dtrain {

// Optimal-string-alignment distance: insertions, deletions, substitutions
// and swaps of two adjacent characters each cost 1 ("mirorred" -> "mirrored" is 1).
size_t edit_distance(std::string_view a, std::string_view b);

// The candidate closest to `word` when it is within 2 edits (and within half
// of word's length, so "ps" does not suggest "lr"); ties go to the earlier candidate.
std::optional<std::string> closest_match(std::string_view word, const std::vector<std::string>& candidates);

// " (did you mean \"x\"?)" for closest_match, or "" when there is none.
std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace dtrain
