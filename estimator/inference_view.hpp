// What predict and export do to raw examples before the model sees them:
// the evaluation's view of the data. data.predict's scale and map when the
// job has data.predict, else data.eval's, else data.train's without its
// random operations (augmentation belongs to training, as Keras'
// preprocessing layers are inactive at inference).
#pragma once

#include <string>
#include <vector>

#include "engine/base/job_spec.hpp"
#include "engine/base/status.hpp"
#include "engine/tensor.hpp"

namespace dtrain {

struct InferenceView {
  std::string role;                  // "data.predict", "data.eval", "data.train"; "" without data
  std::string where;                 // the section's place in the job, for messages
  double scale = 1.0;
  std::vector<MapOpSpec> map;        // the operations applied, in order
  std::vector<std::string> dropped;  // random operations of data.train left out
  // normalize's mean and std when the map is normalize alone (what an ONNX
  // graph holds besides the scale); empty otherwise.
  std::vector<float> mean, std;
  bool map_is_normalize_only() const { return map.empty() || !mean.empty(); }
};

InferenceView inference_view(const JobSpec& job);

// One line saying what the view applies ("" when nothing): "applies
// data.eval's preprocessing: scale 0.00392157, map normalize; left out
// data.train's random operations random_flip (augmentation is for training)".
std::string describe_inference_view(const InferenceView& v);

// x (N, example shape...) as the data holds it (pixels 0..255, ...) -> the
// model's input: multiplied by the scale (unless `scaled`: a decoder already
// did), then the map. Errors are the map's (kConfig: an operation that does
// not fit the examples' shape, naming the job's place).
Result<Tensor> apply_inference_view(Tensor x, const InferenceView& v, bool scaled);

}  // namespace dtrain
