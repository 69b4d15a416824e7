// Shape rule shared by the elementwise losses (sigmoid_cross_entropy,
// mean_squared_error): targets have the model output's shape, except that
// labels () are accepted for output (1), as Keras squeezes (B,) vs (B, 1).
#pragma once

#include <string>

#include "engine/base/status.hpp"
#include "engine/tensor.hpp"

namespace dtrain {

inline Status check_elementwise_shapes(const std::string& loss, const Shape& output, const Shape& label) {
  const bool scalar_pair = output == Shape{1} && label.empty();
  if ((label == output || scalar_pair) && num_elements(output) >= 1) return Status::Ok();
  return config_error(loss + " needs targets of the model output's shape; got output " + shape_str(output) +
                      " and labels " + shape_str(label));
}

}  // namespace dtrain
