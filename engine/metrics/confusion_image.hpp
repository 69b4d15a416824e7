// The confusion matrix as a heat map image (TensorBoard's Images tab).
#pragma once

#include <cstdint>
#include <vector>

#include "engine/io/png_write.hpp"

namespace dtrain {

// An RGB image of C x C square cells (row = true class, column = predicted,
// as the matrix), each cell's colour its share of the row: white for none to
// dark blue for all of the class's examples, so that a rare class is as
// visible as a common one; a row of a class absent from the data is grey.
// Cells are 512 / C pixels (1 to 64) with a 1-pixel grid line when they are
// at least 8. REQUIRES: `confusion` is square and not empty.
Image8 confusion_heat_map(const std::vector<std::vector<int64_t>>& confusion);

}  // namespace dtrain
