// The npy and npz sources: .npy header parsing and conversion to float, and
// pairing a features array with a labels array.
#include "datasets/npy_source.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <fstream>
#include <iterator>
#include <regex>

#include "datasets/npz_file.hpp"

namespace dtrain {

namespace {

template <typename T>
void convert(const uint8_t* p, size_t n, bool swap, std::vector<float>& out) {
  out.resize(n);
  for (size_t i = 0; i < n; ++i) {
    uint8_t buf[sizeof(T)];
    std::memcpy(buf, p + i * sizeof(T), sizeof(T));
    if (swap) std::reverse(buf, buf + sizeof(T));
    T v;
    std::memcpy(&v, buf, sizeof(T));
    out[i] = static_cast<float>(v);
  }
}

Result<std::vector<uint8_t>> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return data_error(path + ": cannot open: " + std::strerror(errno));
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// Where an array's rows are, for locate(): `rows` starts the place of a row
// ("x.npy: row " or "x.npz: array \"x\", row "); `row_size` is the values of
// one row, whose positions are named when there are several.
struct ArrayRows {
  std::string rows;
  int64_t row_size = 1;
};

// ExampleSource::locate() of a source of arrays: features[k] holds model
// input k, labels[j] output j's labels: "x.npy: row 12", "x.npz: array
// \"ids\", row 12, position 3".
ExampleLocator array_locator(std::vector<ArrayRows> features, std::vector<ArrayRows> labels) {
  return [features = std::move(features), labels = std::move(labels)](int64_t id, const ExampleValue& value) {
    const std::vector<ArrayRows>& arrays = value.label ? labels : features;
    const size_t k = value.label ? value.output : value.input;
    if (k >= arrays.size()) return std::string();
    const ArrayRows& a = arrays[k];
    if (value.label || value.position < 0 || a.row_size == 1) return fmt::format("{}{}", a.rows, id);
    return fmt::format("{}{}, position {}", a.rows, id, value.position);
  };
}

// The array rows of an npz member: "<path>: array \"x\", row ".
ArrayRows npz_rows(const std::string& path, const std::string& array, const Shape& shape) {
  return {fmt::format("{}: array \"{}\", row ", path, array), num_elements(Shape(shape.begin() + 1, shape.end()))};
}

Result<SourcePtr> make_source(NpyArray features, NpyArray labels, const std::string& fname, const std::string& lname,
                              const std::string& name, ExampleLocator locate, Tensor weights = {}) {
  if (features.shape.size() < 2) {
    return data_error(fmt::format("{}: features need at least 2 dimensions (count, features...) but shape is {}",
                                  fname, shape_str(features.shape)));
  }
  if (labels.shape.empty() || labels.shape.size() > 2) {
    return data_error(fmt::format("{}: labels need shape (N) or (N, k) but shape is {}", lname, shape_str(labels.shape)));
  }
  if (features.shape[0] != labels.shape[0]) {
    return data_error(fmt::format("{} has {} examples but {} has {} labels", fname, features.shape[0], lname,
                                  labels.shape[0]));
  }
  Shape fshape = features.shape;
  if (fshape.size() == 3) fshape.push_back(1);
  std::vector<Tensor> all_features;
  all_features.push_back(Tensor::from(fshape, features.values));
  std::vector<Tensor> all_labels;
  all_labels.push_back(Tensor::from(labels.shape, labels.values));
  return make_tensor_source(std::move(all_features), std::move(all_labels), name, {0}, std::move(weights), {}, "",
                            std::move(locate));
}

// data.*.weight of an npz source: the array of that name, (N) or (N, 1), of
// n weights, each finite and >= 0; an empty tensor without a weight.
Result<Tensor> read_weights(const ZipArchive& zip, const DataSourceSpec& spec, const SourceContext& ctx,
                            const std::string& path, int64_t n) {
  if (spec.weight.empty()) return Tensor();
  const std::string member = spec.weight + ".npy";
  auto bytes = read_zip_member(zip, member);
  if (!bytes) return data_error(fmt::format("{}weight \"{}\": {}", ctx.prefix, spec.weight, bytes.error().message));
  auto array = parse_npy(*bytes, path + ": " + member);
  if (!array) return array.error();
  const bool column = array->shape.size() == 1 || (array->shape.size() == 2 && array->shape[1] == 1);
  if (!column || array->shape[0] != n) {
    return data_error(fmt::format("{}: {}: weights need shape ({}) (one per example) but the shape is {}", path,
                                  member, n, shape_str(array->shape)));
  }
  Tensor w = Tensor::from(Shape{n}, array->values);
  if (Status s = check_example_weights(w, path + ": " + member); !s) return s.error();
  return w;
}

}  // namespace

Result<NpyArray> parse_npy(const std::vector<uint8_t>& bytes, const std::string& where) {
  static const uint8_t kMagic[] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
  if (bytes.size() < 10 || std::memcmp(bytes.data(), kMagic, 6) != 0) {
    return data_error(where + ": not a .npy file (bad magic bytes)");
  }
  const uint8_t major = bytes[6];
  size_t header_len = 0, start = 0;
  if (major == 1) {
    header_len = bytes[8] | static_cast<size_t>(bytes[9]) << 8;
    start = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) return data_error(where + ": truncated .npy header");
    header_len = bytes[8] | static_cast<size_t>(bytes[9]) << 8 | static_cast<size_t>(bytes[10]) << 16 |
                 static_cast<size_t>(bytes[11]) << 24;
    start = 12;
  } else {
    return data_error(fmt::format("{}: .npy version {} is not supported (1, 2 or 3)", where, major));
  }
  if (start + header_len > bytes.size()) return data_error(where + ": truncated .npy header");
  const std::string header(reinterpret_cast<const char*>(bytes.data() + start), header_len);
  std::smatch m;
  if (!std::regex_search(header, m, std::regex(R"('descr'\s*:\s*'([<>|=])([a-z])(\d+)')"))) {
    return data_error(where + ": .npy header has no descr: " + header);
  }
  NpyArray a;
  a.descr = m[1].str() + m[2].str() + m[3].str();
  const bool swap = m[1].str() == ">";
  const std::string kind = m[2].str() + m[3].str();
  if (std::regex_search(header, std::regex(R"('fortran_order'\s*:\s*True)"))) {
    return data_error(where + ": fortran_order arrays are not supported (save np.ascontiguousarray(x))");
  }
  if (!std::regex_search(header, m, std::regex(R"('shape'\s*:\s*\(([^)]*)\))"))) {
    return data_error(where + ": .npy header has no shape: " + header);
  }
  const std::string dims = m[1].str();
  size_t item = 0;
  if (kind == "f4" || kind == "i4") item = 4;
  else if (kind == "f8" || kind == "i8") item = 8;
  else if (kind == "u1") item = 1;
  else return data_error(where + ": dtype " + a.descr + " is not supported (float32, float64, uint8, int32, int64)");
  // The data bytes the shape needs, which the file must hold: counted with
  // overflow checks (a corrupt header can name any size).
  const uint8_t* data = bytes.data() + start + header_len;
  const size_t have = bytes.size() - start - header_len;
  uint64_t need = item;
  bool too_large = false;
  const std::regex number(R"(\d+)");
  for (std::sregex_iterator it(dims.begin(), dims.end(), number), end; it != end; ++it) {
    const std::string digits = it->str();
    int64_t d = 0;
    const auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), d);
    (void)ptr;
    if (ec != std::errc()) {
      return data_error(fmt::format("{}: .npy shape dimension {} is too large: {}", where, digits, header));
    }
    a.shape.push_back(d);
    too_large = too_large || __builtin_mul_overflow(need, static_cast<uint64_t>(d), &need);
  }
  if (too_large || need != have) {
    return data_error(fmt::format("{}: shape {} of {} needs {} data bytes but the file has {}", where,
                                  shape_str(a.shape), a.descr,
                                  too_large ? std::string("more than 2^64") : std::to_string(need), have));
  }
  const size_t n = need / item;
  if (kind == "f4") convert<float>(data, n, swap, a.values);
  else if (kind == "f8") convert<double>(data, n, swap, a.values);
  else if (kind == "i4") convert<int32_t>(data, n, swap, a.values);
  else if (kind == "i8") convert<int64_t>(data, n, swap, a.values);
  else convert<uint8_t>(data, n, false, a.values);
  return a;
}

std::vector<uint8_t> encode_npy_f32(const Shape& shape, const std::vector<float>& values) {
  std::string dims;
  for (size_t i = 0; i < shape.size(); ++i) dims += (i == 0 ? "" : ", ") + std::to_string(shape[i]);
  if (shape.size() == 1) dims += ",";  // "(3,)" as Python writes a 1-tuple
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + dims + "), }";
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string file = "\x93NUMPY";
  file += static_cast<char>(1);
  file += static_cast<char>(0);
  file += static_cast<char>(header.size() & 0xff);
  file += static_cast<char>(header.size() >> 8);
  file += header;
  file.append(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
  std::vector<uint8_t> out(file.size());
  std::memcpy(out.data(), file.data(), file.size());
  return out;
}

Result<SourcePtr> load_npy_source(const DataSourceSpec& spec, const SourceContext& ctx) {
  if (spec.images.empty() || spec.labels.empty()) return config_error(ctx.prefix + "format npy needs both images and labels");
  const std::string fpath = resolve_source_path(spec.images, ctx.base_dir);
  const std::string lpath = resolve_source_path(spec.labels, ctx.base_dir);
  auto fbytes = read_file(fpath);
  if (!fbytes) return fbytes.error();
  auto features = parse_npy(*fbytes, fpath);
  if (!features) return features.error();
  fbytes.value() = {};
  auto lbytes = read_file(lpath);
  if (!lbytes) return lbytes.error();
  auto labels = parse_npy(*lbytes, lpath);
  if (!labels) return labels.error();
  const Shape& fshape = features->shape;
  ExampleLocator locate = array_locator(
      {{fpath + ": row ", fshape.empty() ? 1 : num_elements(Shape(fshape.begin() + 1, fshape.end()))}},
      {{lpath + ": row ", 1}});
  return make_source(std::move(features.value()), std::move(labels.value()), fpath, lpath, fpath, std::move(locate));
}

// An npz archive of one array per model input, each named like its input
// (or, for one input, the features array) and kept in its own shape
// (N, shape...), and one labels array per output, named by the output's
// labels (or, for one output, the labels array).
Result<SourcePtr> load_named_arrays(const ZipArchive& zip, const DataSourceSpec& spec, const SourceContext& ctx,
                                    const std::string& path) {
  std::vector<Tensor> labels;
  std::string first_labels;  // the member giving the example count
  std::vector<ArrayRows> feature_rows, label_rows;
  const bool named_labels = ctx.label_names.size() > 1;
  const std::vector<std::string> label_names = named_labels ? ctx.label_names : std::vector<std::string>{spec.labels_array};
  for (size_t j = 0; j < label_names.size(); ++j) {
    const std::string lname = label_names[j] + ".npy";
    auto lbytes = read_zip_member(zip, lname);
    if (!lbytes && named_labels) {
      return data_error(fmt::format("{}model.outputs.{}: labels \"{}\": {} (an npz source gives each output the "
                                    "array named by its labels)",
                                    ctx.prefix, ctx.outputs[j], label_names[j], lbytes.error().message));
    }
    if (!lbytes) return lbytes.error();
    auto array = parse_npy(*lbytes, path + ": " + lname);
    if (!array) return array.error();
    if (array->shape.empty() || (!named_labels && array->shape.size() > 2)) {
      return data_error(fmt::format("{}: {}: labels need shape (N) or (N, k) but shape is {}", path, lname,
                                    shape_str(array->shape)));
    }
    if (!labels.empty() && array->shape[0] != labels[0].dim(0)) {
      return data_error(fmt::format("{}: {} has {} examples but {} has {} labels", path, lname, array->shape[0],
                                    first_labels, labels[0].dim(0)));
    }
    if (labels.empty()) first_labels = lname;
    label_rows.push_back(npz_rows(path, label_names[j], array->shape));
    labels.push_back(Tensor::from(array->shape, array->values));
  }
  const int64_t n = labels[0].dim(0);
  const bool named_inputs = ctx.inputs.size() > 1;
  std::vector<Tensor> features;
  for (const std::string& input : named_inputs ? ctx.inputs : std::vector<std::string>{spec.features_array}) {
    const std::string member = input + ".npy";
    auto bytes = read_zip_member(zip, member);
    if (!bytes && named_inputs) {
      return data_error(fmt::format("{}model input \"{}\": {} (an npz source gives each model input the array of "
                                    "its name)",
                                    ctx.prefix, input, bytes.error().message));
    }
    if (!bytes) return bytes.error();
    auto array = parse_npy(*bytes, path + ": " + member);
    if (!array) return array.error();
    if (array->shape.size() < 2) {
      return data_error(fmt::format("{}: {}: the array of model input \"{}\" needs at least 2 dimensions (count, "
                                    "shape...) but its shape is {}",
                                    path, member, input, shape_str(array->shape)));
    }
    if (array->shape[0] != n) {
      return data_error(fmt::format("{}: {} has {} examples but {} has {} labels", path, member, array->shape[0],
                                    first_labels, n));
    }
    feature_rows.push_back(npz_rows(path, input, array->shape));
    features.push_back(Tensor::from(array->shape, array->values));
  }
  auto weights = read_weights(zip, spec, ctx, path, n);
  if (!weights) return weights.error();
  return make_tensor_source(std::move(features), std::move(labels), path, {0}, std::move(*weights), {}, "",
                            array_locator(std::move(feature_rows), std::move(label_rows)));
}

Result<SourcePtr> load_npz_source(const DataSourceSpec& spec, const SourceContext& ctx) {
  if (spec.path.empty()) return config_error(ctx.prefix + "format npz needs a path");
  const std::string path = resolve_source_path(spec.path, ctx.base_dir);
  auto zip = open_zip(path);
  if (!zip) return zip.error();
  if (ctx.inputs.size() > 1 || ctx.label_names.size() > 1) return load_named_arrays(*zip, spec, ctx, path);
  const std::string fname = spec.features_array + ".npy", lname = spec.labels_array + ".npy";
  auto fbytes = read_zip_member(*zip, fname);
  if (!fbytes) return fbytes.error();
  auto features = parse_npy(*fbytes, path + ": " + fname);
  if (!features) return features.error();
  auto lbytes = read_zip_member(*zip, lname);
  if (!lbytes) return lbytes.error();
  auto labels = parse_npy(*lbytes, path + ": " + lname);
  if (!labels) return labels.error();
  auto weights = read_weights(*zip, spec, ctx, path, labels->shape.empty() ? 0 : labels->shape[0]);
  if (!weights) return weights.error();
  // Shapes too short for examples are make_source's errors; the locator is then not used.
  ExampleLocator locate =
      features->shape.empty() || labels->shape.empty()
          ? nullptr
          : array_locator({npz_rows(path, spec.features_array, features->shape)},
                          {npz_rows(path, spec.labels_array, labels->shape)});
  return make_source(std::move(features.value()), std::move(labels.value()), path + ": " + fname,
                     path + ": " + lname, path, std::move(locate), std::move(*weights));
}

}  // namespace dtrain
