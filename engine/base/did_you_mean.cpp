// Edit distance and the suggestion built from it.
#include "engine/base/did_you_mean.hpp"

#include <algorithm>

namespace dtrain {

size_t edit_distance(std::string_view a, std::string_view b) {
  // d[i][j]: distance between a[0..i) and b[0..j); three rows suffice for the swap case.
  const size_t n = a.size(), m = b.size();
  std::vector<size_t> prev2(m + 1), prev(m + 1), cur(m + 1);
  for (size_t j = 0; j <= m; ++j) prev[j] = j;
  for (size_t i = 1; i <= n; ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= m; ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) cur[j] = std::min(cur[j], prev2[j - 2] + 1);
    }
    prev2.swap(prev);
    prev.swap(cur);
  }
  return prev[m];
}

std::optional<std::string> closest_match(std::string_view word, const std::vector<std::string>& candidates) {
  const size_t limit = std::min<size_t>(2, word.size() / 2);
  std::optional<std::string> best;
  size_t best_distance = limit + 1;
  for (const std::string& c : candidates) {
    const size_t d = edit_distance(word, c);
    if (d > 0 && d < best_distance) {
      best = c;
      best_distance = d;
    }
  }
  return best;
}

std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates) {
  auto match = closest_match(word, candidates);
  return match ? " (did you mean \"" + *match + "\"?)" : "";
}

}  // namespace dtrain
