// How a variable starts: the initializer a job names for a layer's kernel,
// bias or embeddings (the job spec) and that the layer's ParamSpec carries.
#pragma once

#include <string>

namespace dtrain {

struct InitializerSpec {
  std::string type = "glorot_uniform";  // glorot_uniform | he_normal | random_uniform | zeros | constant | ones
  float value = 0.0f;                   // for constant
  float minval = -0.05f, maxval = 0.05f;  // for random_uniform: U(minval, maxval), Keras' defaults
};

}  // namespace dtrain
