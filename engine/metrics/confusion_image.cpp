// confusion_heat_map: cells coloured by row share between white and
// matplotlib's darkest "Blues" (8, 48, 107).
#include "engine/metrics/confusion_image.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>

namespace dtrain {

Image8 confusion_heat_map(const std::vector<std::vector<int64_t>>& confusion) {
  const int c = static_cast<int>(confusion.size());
  assert(c > 0);
  const int cell = std::clamp(512 / c, 1, 64);
  const bool grid = cell >= 8;
  Image8 img;
  img.height = img.width = c * cell;
  img.channels = 3;
  img.pixels.assign(static_cast<size_t>(img.height) * static_cast<size_t>(img.width) * 3, 255);
  constexpr double kDark[3] = {8, 48, 107};
  for (int t = 0; t < c; ++t) {
    assert(static_cast<int>(confusion[static_cast<size_t>(t)].size()) == c);
    int64_t row = 0;
    for (int64_t n : confusion[static_cast<size_t>(t)]) row += n;
    for (int p = 0; p < c; ++p) {
      uint8_t rgb[3] = {200, 200, 200};  // an absent class
      if (row > 0) {
        const double share = static_cast<double>(confusion[static_cast<size_t>(t)][static_cast<size_t>(p)]) /
                             static_cast<double>(row);
        for (int k = 0; k < 3; ++k) rgb[k] = static_cast<uint8_t>(std::lround(255.0 - share * (255.0 - kDark[k])));
      }
      for (int y = t * cell; y < (t + 1) * cell; ++y) {
        for (int x = p * cell; x < (p + 1) * cell; ++x) {
          const bool line = grid && (y == t * cell || x == p * cell);
          uint8_t* px = &img.pixels[(static_cast<size_t>(y) * static_cast<size_t>(img.width) + static_cast<size_t>(x)) * 3];
          for (int k = 0; k < 3; ++k) px[k] = line ? 128 : rgb[k];
        }
      }
    }
  }
  return img;
}

}  // namespace dtrain
