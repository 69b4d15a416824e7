// Prediction: model outputs (softmax/sigmoid probabilities or raw values) for
// every example of an input file, in input order, to .npy or .csv (one file
// per output for a model of several outputs).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <nlohmann/json.hpp>

#include "estimator/estimator.hpp"
#include "datasets/image_folder_source.hpp"
#include "datasets/text_folder_source.hpp"
#include "datasets/npy_source.hpp"
#include "datasets/source.hpp"
#include "datasets/npz_file.hpp"
#include "estimator/inference_view.hpp"
#include "estimator/npy.hpp"

namespace dtrain {
namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// A CSV field: quoted (doubling its quotes) when it holds a comma, quote or line end.
std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

// One row per example: the predicted class and each probability (or the
// values); with `files`, the example's file first; with class names, the
// predicted class's name after its id.
Status write_csv(const std::string& path, const Tensor& pred, const std::vector<std::string>& files = {},
                 const std::vector<std::string>& class_names = {}) {
  std::ofstream f(path);
  const int64_t n = pred.dim(0), k = pred.numel() / std::max<int64_t>(n, 1);
  const bool names = k > 1 && static_cast<int64_t>(class_names.size()) == k;
  if (!files.empty()) f << "file,";
  if (k > 1) {
    f << (names ? "class,class_name" : "class");
    for (int64_t j = 0; j < k; ++j) f << ",p" << (names ? csv_field(class_names[static_cast<size_t>(j)]) : std::to_string(j));
  } else {
    f << "value";
  }
  f << '\n';
  for (int64_t i = 0; i < n; ++i) {
    const float* row = pred.data() + i * k;
    if (!files.empty()) f << csv_field(files[static_cast<size_t>(i)]) << ',';
    if (k > 1) {
      const auto best = std::max_element(row, row + k) - row;
      f << best;
      if (names) f << ',' << csv_field(class_names[static_cast<size_t>(best)]);
    }
    for (int64_t j = 0; j < k; ++j) f << (k > 1 || j > 0 ? "," : "") << fmt::format("{:.6g}", row[j]);
    f << '\n';
  }
  if (!f) return runtime_error(fmt::format("cannot write {}", path));
  return Status::Ok();
}

// One JSON object per example: {"file": ... (with files), "class": id,
// "class_name": ... (with class names), "probabilities": {name or id: p}},
// or {"value": v} for a model output of one unit.
Status write_json_lines(const std::string& path, const Tensor& pred, const std::vector<std::string>& files,
                        const std::vector<std::string>& class_names) {
  std::ofstream f(path);
  const int64_t n = pred.dim(0), k = pred.numel() / std::max<int64_t>(n, 1);
  const bool names = k > 1 && static_cast<int64_t>(class_names.size()) == k;
  for (int64_t i = 0; i < n; ++i) {
    const float* row = pred.data() + i * k;
    nlohmann::ordered_json j;
    if (!files.empty()) j["file"] = files[static_cast<size_t>(i)];
    if (k > 1) {
      const auto best = std::max_element(row, row + k) - row;
      j["class"] = best;
      if (names) j["class_name"] = class_names[static_cast<size_t>(best)];
      nlohmann::ordered_json p = nlohmann::ordered_json::object();
      for (int64_t c = 0; c < k; ++c) {
        p[names ? class_names[static_cast<size_t>(c)] : std::to_string(c)] = row[c];
      }
      j["probabilities"] = p;
    } else {
      j["value"] = row[0];
    }
    f << j.dump() << '\n';
  }
  if (!f) return runtime_error(fmt::format("cannot write {}", path));
  return Status::Ok();
}

// Where output j's predictions go: `path` itself for a model of one output,
// else P.LAYER.npy for path P.npy (P.LAYER.csv for P.csv), one per output.
std::string output_file(const std::string& path, const Model& model, size_t j) {
  const auto& outputs = model.outputs();
  if (outputs.size() == 1 && outputs[0].where.empty()) return path;
  const size_t dot = path.rfind('.');  // ".npy", ".csv" or ".jsonl", checked first
  return path.substr(0, dot) + "." + outputs[j].name + path.substr(dot);
}

// The image files of --input: the file itself, or every .jpg/.jpeg/.png
// (text: .txt) under the folder (sub-folders included), sorted by path.
Result<std::vector<std::string>> image_inputs(const std::string& input, bool text = false) {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::vector<std::string> files;
  if (!fs::is_directory(input, ec)) {
    if (!fs::exists(input, ec)) return data_error(fmt::format("--input {}: no such file or folder", input));
    files.push_back(input);
    return files;
  }
  for (const fs::directory_entry& e : fs::recursive_directory_iterator(input, ec)) {
    const std::string name = e.path().string();
    if (e.is_regular_file(ec) && (text ? is_text_file_name(name) : is_image_file_name(name))) files.push_back(name);
  }
  if (ec) return data_error(fmt::format("--input {}: {}", input, ec.message()));
  std::sort(files.begin(), files.end());
  if (files.empty()) {
    return data_error(fmt::format("--input {}: no {} files in the folder", input, text ? ".txt" : ".jpg, .jpeg or .png"));
  }
  return files;
}

}  // namespace

Result<Tensor> Estimator::read_predict_images(const std::vector<std::string>& files,
                                              std::vector<std::string>& class_names) {
  const Model& model = *program_.model;
  const std::optional<DataSourceSpec>& train = job_.data.train;
  if (!train || train->format != "image_folder") {
    return config_error("--input: image files are read as data.train reads its images, but this job's data.train is "
                        "not an image_folder; give a .npy array of examples instead");
  }
  const int64_t h = train->image_size[0], w = train->image_size[1], c = color_mode_channels(train->color_mode);
  if (model.num_inputs() != 1) {
    return config_error(fmt::format("--input: image files give one input, but the model reads {}",
                                    model.num_inputs()));
  }
  const InferenceView view = inference_view(job_);
  // The class names, as training numbered the folders.
  auto source = load_source(*train, SourceContext{job_.base_dir, train->where + ": data.train: "});
  if (source) class_names = (*source)->class_names();
  const auto n = static_cast<int64_t>(files.size());
  Tensor x(Shape{n, h, w, c});
  std::vector<float> scratch;
  for (int64_t i = 0; i < n; ++i) {
    if (Status s = decode_image_file(files[static_cast<size_t>(i)], h, w, c, static_cast<float>(view.scale),
                                     x.data() + i * h * w * c, scratch);
        !s) {
      return s.error();
    }
  }
  return apply_inference_view(std::move(x), view, true);
}

Status Estimator::predict(const std::string& input_path, const std::string& output_path,
                          const std::optional<std::string>& checkpoint) {
  if (!ends_with(output_path, ".npy") && !ends_with(output_path, ".csv") && !ends_with(output_path, ".jsonl")) {
    return config_error(fmt::format("--output {}: expected a .npy, .csv or .jsonl file name", output_path));
  }
  const Model& model = *program_.model;
  const std::string wanted = model.num_inputs() > 1 ? ".npz" : ".npy";
  std::error_code ec;
  std::vector<std::string> image_files, class_names;
  const bool csv_rows = (model.num_inputs() == 1 || (job_.data.train && job_.data.train->format == "csv")) &&
                        (ends_with(input_path, ".csv") || ends_with(input_path, ".csv.gz"));
  const bool texts = job_.data.train && job_.data.train->format == "text_folder" &&
                     (std::filesystem::is_directory(input_path, ec) || is_text_file_name(input_path));
  if (texts || std::filesystem::is_directory(input_path, ec) || is_image_file_name(input_path)) {
    auto files = image_inputs(input_path, texts);
    if (!files) return files.error();
    image_files = std::move(*files);
  } else if (!csv_rows && !ends_with(input_path, wanted)) {
    std::string names;
    for (const ModelInput& in : model.inputs()) names += (names.empty() ? "" : ", ") + in.name;
    return config_error(model.num_inputs() > 1
                            ? fmt::format("--input {}: expected a .npz file with one array per model input ({})",
                                          input_path, names)
                            : fmt::format("--input {}: expected a .npy file of examples (N, {}), a .csv file of "
                                          "rows (csv jobs) or images (image_folder jobs)",
                                          input_path, shape_str(model.input_shape()).substr(1)));
  }
  // One tensor per model input, in the order of model.inputs().
  std::vector<Tensor> inputs;
  SourcePtr csv_source;  // --input rows.csv
  if (texts) {
    auto x = read_predict_texts(image_files, class_names);
    if (!x) return x.error();
    inputs.push_back(std::move(*x));
  } else if (!image_files.empty()) {
    auto x = read_predict_images(image_files, class_names);
    if (!x) return x.error();
    inputs.push_back(std::move(*x));
  } else if (csv_rows) {
    auto source = read_predict_csv(input_path, class_names);
    if (!source) return source.error();
    csv_source = *source;
    std::vector<int64_t> all(csv_source->size());
    std::iota(all.begin(), all.end(), int64_t{0});
    Batch b = csv_source->gather(all, 1.0f);  // the evaluation's scale and map: below
    inputs.push_back(std::move(b.features));
    for (Tensor& t : b.extra_features) inputs.push_back(std::move(t));
  } else if (model.num_inputs() == 1) {
    auto x = read_npy(input_path);
    if (!x) return x.error();
    inputs.push_back(std::move(*x));
  } else {
    auto zip = open_zip(input_path);
    if (!zip) return zip.error();
    for (const ModelInput& in : model.inputs()) {
      auto bytes = read_zip_member(*zip, in.name + ".npy");
      if (!bytes) return data_error(fmt::format("model input \"{}\": {}", in.name, bytes.error().message));
      auto array = parse_npy(*bytes, input_path + ": " + in.name + ".npy");
      if (!array) return array.error();
      inputs.push_back(Tensor::from(array->shape, array->values));
    }
  }
  // Raw examples, as the data holds them: the evaluation's scale and map
  // (images were scaled and mapped as they were decoded).
  const InferenceView view = inference_view(job_);
  if (image_files.empty()) {
    for (size_t k = 0; k < inputs.size(); ++k) {
      const ModelInput& in = model.inputs()[k];
      Tensor& x = inputs[k];
      if (in.dtype != DType::f32 || x.rank() < 1 || x.dim(0) == 0) continue;  // token ids; bad arrays: below
      InferenceView v = view;
      if (k > 0) v.map.clear();  // the map works on the first input, as in the pipeline
      if (!v.map.empty() && x.numel() / x.dim(0) == num_elements(in.shape)) {
        Shape batched = {x.dim(0)};  // a flat array of the model's examples: the map sees their shape
        batched.insert(batched.end(), in.shape.begin(), in.shape.end());
        x = x.reshaped(batched);
      }
      auto mapped = apply_inference_view(std::move(x), v, false);
      if (!mapped) return mapped.error();
      x = std::move(*mapped);
    }
  }
  if (const std::string applied = describe_inference_view(view); !applied.empty()) {
    log_.info("predict: " + applied);
  }
  const int64_t n = inputs[0].rank() < 1 ? 0 : inputs[0].dim(0);
  // Where value `position` of input k's example `example` is, for data
  // errors: the csv line and column, the image or text file, the array's row.
  auto place = [&](size_t k, int64_t example, int64_t position) -> std::string {
    const std::string at = csv_source ? csv_source->locate(example, ExampleValue{.input = k, .position = position}) : "";
    if (!at.empty()) return at;
    if (!image_files.empty()) {
      const std::string& file = image_files[static_cast<size_t>(example)];
      return texts ? fmt::format("{}, token {}", file, position) : file;
    }
    const std::string array = model.num_inputs() > 1 ? fmt::format("{}: {}.npy", input_path, model.inputs()[k].name)
                                                     : input_path;
    return fmt::format("{}: row {}, position {}", array, example, position);
  };
  for (size_t k = 0; k < inputs.size(); ++k) {
    const ModelInput& in = model.inputs()[k];
    const std::string where = model.num_inputs() > 1 ? fmt::format("{}: {}.npy", input_path, in.name) : input_path;
    const std::string key = model.num_inputs() > 1 ? "model.inputs." + in.name : "model.input";
    Tensor& x = inputs[k];
    const int64_t per_example = num_elements(in.shape);
    if (x.rank() < 1 || x.dim(0) == 0 || x.numel() % x.dim(0) != 0 || x.numel() / x.dim(0) != per_example) {
      return data_error(fmt::format("{}: array of shape {} does not hold examples of {}.shape {}", where,
                                    shape_str(x.shape()), key, shape_str(in.shape)));
    }
    if (x.dim(0) != n) {
      return data_error(fmt::format("{}: {} examples, but {}.npy has {}", where, x.dim(0), model.input_name(), n));
    }
    Shape batched = {n};
    batched.insert(batched.end(), in.shape.begin(), in.shape.end());
    x = x.reshaped(batched);
    if (in.dtype == DType::i32 && x.dtype() == DType::i32) {
      // Token ids already (.txt files)
    } else if (in.dtype == DType::i32) {
      // Token ids: any numeric array whose values are whole numbers in int32's range.
      Tensor ids = Tensor::zeros(batched, DType::i32, kHost);
      int32_t* out = ids.host_data<int32_t>();
      for (int64_t i = 0; i < x.numel(); ++i) {
        const double v = x[i];
        if (!(v == std::floor(v) && v >= -2147483648.0 && v <= 2147483647.0)) {
          return data_error(fmt::format("{}: {} is not a token id ({}.dtype is int32, so features must be whole "
                                        "numbers in int32's range)",
                                        place(k, i / per_example, i % per_example), x[i], key));
        }
        out[i] = static_cast<int32_t>(v);
      }
      x = std::move(ids);
    }
  }
  auto restored = restore_for_inference(checkpoint);
  if (!restored) return restored.error();
  const std::string& path = *restored;
  const int64_t bs = job_.data.predict ? job_.data.predict->batch_size : 256;
  // One tensor per output (model.outputs, or the one output).
  std::vector<Tensor> outs;
  for (const ModelOutput& o : model.outputs()) {
    Shape out_shape = {n};
    out_shape.insert(out_shape.end(), o.shape.begin(), o.shape.end());
    outs.emplace_back(out_shape);
  }
  for (int64_t b = 0; b < n; b += bs) {
    const int64_t e = std::min(n, b + bs);
    Batch batch;
    batch.features = inputs[0].rows(b, e);
    for (size_t k = 1; k < inputs.size(); ++k) batch.extra_features.push_back(inputs[k].rows(b, e));
    const auto place_in_file = [&](size_t k, int64_t row, int64_t position) { return place(k, b + row, position); };
    if (Status s = model.check_input(batch.features, batch.extra_features, place_in_file); !s) return s;
    const std::vector<Tensor> p = strategy_->predict_outputs(batch);
    for (size_t j = 0; j < outs.size(); ++j) outs[j].rows(b, e).copy_from(p[j]);
  }
  std::string written;
  for (size_t j = 0; j < outs.size(); ++j) {
    const std::string file = output_file(output_path, model, j);
    Status s = ends_with(file, ".npy")     ? write_npy(file, outs[j])
               : ends_with(file, ".jsonl") ? write_json_lines(file, outs[j], image_files,
                                                              j == 0 ? class_names : std::vector<std::string>{})
                                       : write_csv(file, outs[j], image_files, j == 0 ? class_names : std::vector<std::string>{});
    if (!s) return s;
    written += (written.empty() ? "" : ", ") + file;
  }
  log_threads();
  log_.info(fmt::format("wrote {} predictions to {} (checkpoint {})", n, written, path));
  return Status::Ok();
}

}  // namespace dtrain
