// NPY and NPZ sources against files written by numpy (tests/data/gen_npy.py):
// every dtype, stored and deflated archives, and malformed files.
#include <doctest.h>
#include <nlohmann/json.hpp>

#include <fstream>

#include "data_test_util.hpp"
#include "datasets/npy_source.hpp"
#include "datasets/npz_file.hpp"

namespace dtrain {
namespace {

std::string npy_dir() { return std::string(DTRAIN_SOURCE_ROOT "/tests/data/npy"); }

nlohmann::json expected() {
  std::ifstream in(npy_dir() + "/expected.json");
  return nlohmann::json::parse(in);
}

std::vector<float> all_values(const ExampleSource& s, bool labels) {
  std::vector<int64_t> idx;
  for (int64_t i = 0; i < s.size(); ++i) idx.push_back(i);
  const Batch b = s.gather(idx, 1.0f);
  return labels ? b.labels.to_vector() : b.features.to_vector();
}

TEST_CASE("npy: every supported dtype parses to numpy's values") {
  const nlohmann::json want = expected();
  for (const char* name : {"f4", "f8", "f8_big", "u1", "i4", "i8", "labels", "targets"}) {
    INFO(name);
    const std::string path = npy_dir() + "/" + name + ".npy";
    auto a = parse_npy(data_testing::read_bytes(path), path);
    REQUIRE_MESSAGE(a.ok(), a.error().message);
    CHECK(a->shape == want[name]["shape"].get<Shape>());
    CHECK(a->values == want[name]["values"].get<std::vector<float>>());
  }
}

TEST_CASE("npy: a source from two .npy files, (N, H, W) as one-channel images") {
  const nlohmann::json want = expected();
  DataSourceSpec spec;
  spec.format = "npy";
  spec.images = "u1.npy";
  spec.labels = "labels.npy";
  auto s = load_source(spec, SourceContext{npy_dir(), ""});
  REQUIRE_MESSAGE(s.ok(), s.error().message);
  CHECK((*s)->size() == 4);
  CHECK((*s)->feature_shape() == Shape{2, 3, 1});
  CHECK((*s)->label_shape() == Shape{});
  CHECK(all_values(**s, false) == want["u1"]["values"].get<std::vector<float>>());
  CHECK(all_values(**s, true) == want["labels"]["values"].get<std::vector<float>>());

  spec.labels = "targets.npy";
  spec.images = "f8_big.npy";
  auto t = load_source(spec, SourceContext{npy_dir(), ""});
  REQUIRE_MESSAGE(t.ok(), t.error().message);
  CHECK((*t)->label_shape() == Shape{2});
  CHECK(all_values(**t, true) == want["targets"]["values"].get<std::vector<float>>());
  CHECK(all_values(**t, false) == want["f8"]["values"].get<std::vector<float>>());
}

TEST_CASE("npz: stored and deflated archives") {
  const nlohmann::json want = expected();
  DataSourceSpec spec;
  spec.format = "npz";
  spec.features_array = "x";
  spec.labels_array = "y";
  spec.path = npy_dir() + "/stored.npz";
  auto stored = load_source(spec, SourceContext{});
  REQUIRE_MESSAGE(stored.ok(), stored.error().message);
  CHECK(all_values(**stored, false) == want["f4"]["values"].get<std::vector<float>>());
  CHECK(all_values(**stored, true) == want["labels"]["values"].get<std::vector<float>>());
  spec.path = npy_dir() + "/deflated.npz";
  auto deflated = load_source(spec, SourceContext{});
  REQUIRE_MESSAGE(deflated.ok(), deflated.error().message);
  CHECK(all_values(**deflated, false) == want["u1"]["values"].get<std::vector<float>>());
  CHECK(all_values(**deflated, true) == want["targets"]["values"].get<std::vector<float>>());

  spec.features_array = "images";
  auto missing = load_source(spec, SourceContext{});
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().message ==
        npy_dir() + "/deflated.npz: images.npy: no such member in the archive (members: x.npy, y.npy)");
}

TEST_CASE("npy/npz: malformed files are kData errors naming the file") {
  data_testing::TempDir dir;
  std::vector<uint8_t> f4 = data_testing::read_bytes(npy_dir() + "/f4.npy");
  auto error_of = [&](const std::vector<uint8_t>& bytes) {
    auto r = parse_npy(bytes, "a.npy");
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().kind == ErrorKind::kData);
    return r.error().message;
  };
  std::vector<uint8_t> bad = f4;
  bad[1] = 'X';
  CHECK(error_of(bad) == "a.npy: not a .npy file (bad magic bytes)");
  bad = f4;
  bad.pop_back();
  CHECK(error_of(bad) == "a.npy: shape [4, 2, 3] of <f4 needs 96 data bytes but the file has 95");
  const std::string header(f4.begin(), f4.begin() + 40);
  bad = f4;
  const size_t d = header.find("<f4");
  bad[d + 1] = 'c';
  bad[d + 2] = '8';
  CHECK(error_of(bad) == "a.npy: dtype <c8 is not supported (float32, float64, uint8, int32, int64)");
  // A shape whose byte count overflows (fuzz_arrays found the element count
  // overflowing int64 in num_elements), and one dimension past int64.
  auto with_shape = [&](const std::string& shape) {
    std::string h = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + shape + "), }\n";
    std::vector<uint8_t> b = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, static_cast<uint8_t>(h.size()), 0};
    b.insert(b.end(), h.begin(), h.end());
    b.insert(b.end(), 8, 0);
    return b;
  };
  CHECK(error_of(with_shape("158105209502760960, 68, 2")) ==
        "a.npy: shape [158105209502760960, 68, 2] of <f4 needs more than 2^64 data bytes but the file has 8");
  CHECK(error_of(with_shape("4611686018427387904,")) ==
        "a.npy: shape [4611686018427387904] of <f4 needs more than 2^64 data bytes but the file has 8");
  CHECK(error_of(with_shape("99999999999999999999, 2")) ==
        "a.npy: .npy shape dimension 99999999999999999999 is too large: {'descr': '<f4', 'fortran_order': False, "
        "'shape': (99999999999999999999, 2), }\n");
  CHECK(parse_npy(with_shape("2,"), "a.npy").ok());

  std::vector<uint8_t> zip = data_testing::read_bytes(npy_dir() + "/deflated.npz");
  zip[60] ^= 0xff;  // inside the first member's deflate data
  data_testing::write_bytes(dir.file("bad.npz"), zip);
  auto z = open_zip(dir.file("bad.npz"));
  REQUIRE(z.ok());
  auto m = read_zip_member(*z, "x.npy");
  REQUIRE_FALSE(m.ok());
  CHECK(m.error().message == dir.file("bad.npz") + ": x.npy: CRC-32 mismatch");
  data_testing::write_bytes(dir.file("not.npz"), f4);
  CHECK(open_zip(dir.file("not.npz")).error().message ==
        dir.file("not.npz") + ": not a zip archive (no end-of-central-directory record)");
}

TEST_CASE("npy: encode_npy_f32 round-trips through parse_npy") {
  const std::vector<float> v = {1.5f, -2.0f, 3.25f, 0.0f, 7.0f, -0.125f};
  for (const Shape& s : {Shape{6}, Shape{2, 3}, Shape{1, 2, 3}}) {
    auto a = parse_npy(encode_npy_f32(s, v), "x");
    REQUIRE_MESSAGE(a.ok(), a.error().message);
    CHECK(a->shape == s);
    CHECK(a->values == v);
    CHECK(a->descr == "<f4");
  }
}

}  // namespace
}  // namespace dtrain

namespace dtrain {
namespace {

// A model of two inputs, x (int32 ids) and y, over deflated.npz (x: uint8
// (4, 2, 3), y: float32 (4, 2), also the labels): each input gets the array
// of its name in its own shape, whatever the gathering threads.
TEST_CASE("npz: one array per model input, by name, on 1 and 3 gathering threads") {
  const nlohmann::json want = expected();
  const std::vector<float> x = want["u1"]["values"].get<std::vector<float>>();
  const std::vector<float> y = want["targets"]["values"].get<std::vector<float>>();
  DataSourceSpec spec;
  spec.format = "npz";
  spec.path = npy_dir() + "/deflated.npz";
  spec.labels_array = "y";
  spec.repeat = false;
  spec.prefetch = 0;
  for (int64_t calls : {1, 3}) {
    INFO(calls);
    spec.num_parallel_calls = calls;
    InputOptions options;
    options.global_batch = 4;
    options.feature_dtype = DType::i32;
    options.input_names = {"x", "y"};
    options.extra_feature_dtypes = {DType::f32};
    auto input = make_input(spec, options);
    REQUIRE_MESSAGE(input.ok(), input.error().message);
    CHECK((*input)->feature_shape() == Shape{2, 3});  // kept as stored: no (N, H, W) -> (H, W, 1) for named inputs
    CHECK((*input)->extra_feature_shapes() == std::vector<Shape>{Shape{2}});
    CHECK((*input)->extra_feature_dtypes() == std::vector<DType>{DType::f32});
    auto b = (*input)->next();
    REQUIRE(b.ok());
    REQUIRE(b->has_value());
    const Batch& batch = **b;
    REQUIRE(batch.features.dtype() == DType::i32);
    REQUIRE(batch.features.numel() == static_cast<int64_t>(x.size()));
    for (size_t i = 0; i < x.size(); ++i) CHECK(batch.features.host_data<int32_t>()[i] == static_cast<int32_t>(x[i]));
    REQUIRE(batch.extra_features.size() == 1);
    CHECK(batch.extra_features[0].shape() == Shape{4, 2});
    CHECK(batch.extra_features[0].to_vector() == y);
    CHECK(batch.labels.to_vector() == y);
  }
  // An input the archive does not hold: a data error naming the input.
  InputOptions options;
  options.global_batch = 4;
  options.input_names = {"x", "z"};
  options.extra_feature_dtypes = {DType::f32};
  auto missing = make_input(spec, options);
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().kind == ErrorKind::kData);
  CHECK(missing.error().message == "data: model input \"z\": " + npy_dir() +
                                       "/deflated.npz: z.npy: no such member in the archive (members: x.npy, y.npy) (an "
                                       "npz source gives each model input the array of its name)");
  // A format that cannot name its inputs.
  spec.format = "idx";
  auto idx = make_input(spec, options);
  REQUIRE_FALSE(idx.ok());
  CHECK(idx.error().kind == ErrorKind::kConfig);
  CHECK(idx.error().message == "data: format idx gives each example one features tensor, but the model has 2 inputs "
                               "(x, z); use format csv (columns with input: naming it) or tfrecord (features named like the "
                               "inputs) or npz (arrays named like "
                               "the inputs)");
}

}  // namespace
}  // namespace dtrain

namespace dtrain {
namespace {

// Data errors found after loading (an id out of an embedding's range, a
// feature that is not a token id) name the file, the array and the row, and
// for an example of several values the flat position in it.
TEST_CASE("npy/npz: locate names the file, the array, the row and the position") {
  const std::string dir = npy_dir();
  DataSourceSpec spec;
  spec.format = "npy";
  spec.images = "u1.npy";  // (4, 2, 3)
  spec.labels = "labels.npy";
  auto npy = load_source(spec, SourceContext{dir, ""});
  REQUIRE_MESSAGE(npy.ok(), npy.error().message);
  CHECK((*npy)->locate(2, ExampleValue{}) == dir + "/u1.npy: row 2");
  CHECK((*npy)->locate(2, ExampleValue{.position = 4}) == dir + "/u1.npy: row 2, position 4");
  CHECK((*npy)->locate(3, ExampleValue{.label = true}) == dir + "/labels.npy: row 3");
  CHECK((*npy)->locate(3, ExampleValue{.input = 1, .position = 0}).empty());  // no second input

  spec = DataSourceSpec{};
  spec.format = "npz";
  spec.path = dir + "/stored.npz";
  spec.features_array = "x";
  spec.labels_array = "y";
  auto npz = load_source(spec, SourceContext{});
  REQUIRE_MESSAGE(npz.ok(), npz.error().message);
  CHECK((*npz)->locate(1, ExampleValue{.position = 5}) == dir + "/stored.npz: array \"x\", row 1, position 5");
  CHECK((*npz)->locate(1, ExampleValue{}) == dir + "/stored.npz: array \"x\", row 1");
  CHECK((*npz)->locate(0, ExampleValue{.label = true}) == dir + "/stored.npz: array \"y\", row 0");

  // One array per model input: input k is the array of its name; a row of one
  // value names no position.
  spec.path = dir + "/deflated.npz";
  SourceContext named{};
  named.inputs = {"x", "y"};
  auto arrays = load_source(spec, named);
  REQUIRE_MESSAGE(arrays.ok(), arrays.error().message);
  CHECK((*arrays)->locate(3, ExampleValue{.input = 1, .position = 1}) ==
        dir + "/deflated.npz: array \"y\", row 3, position 1");
  CHECK((*arrays)->locate(3, ExampleValue{.input = 0, .position = 2}) ==
        dir + "/deflated.npz: array \"x\", row 3, position 2");
  CHECK((*arrays)->locate(0, ExampleValue{.input = 2, .position = 0}).empty());
  CHECK((*arrays)->locate(2, ExampleValue{.label = true}) == dir + "/deflated.npz: array \"y\", row 2");

  // Several outputs: a label names its own output's array.
  SourceContext outputs{};
  outputs.outputs = {"a", "b"};
  outputs.label_names = {"y", "x"};
  auto labelled = load_source(spec, outputs);
  REQUIRE_MESSAGE(labelled.ok(), labelled.error().message);
  CHECK((*labelled)->locate(1, ExampleValue{.label = true, .output = 1}) == dir + "/deflated.npz: array \"x\", row 1");
  CHECK((*labelled)->locate(1, ExampleValue{.label = true}) == dir + "/deflated.npz: array \"y\", row 1");
  CHECK((*labelled)->locate(1, ExampleValue{.label = true, .output = 2}).empty());
}

// An int32 input over float values: the first value that is not a whole
// number stops the batch, named by array, row and position.
TEST_CASE("npz: a feature that is not a token id is a data error naming the array, row and position") {
  DataSourceSpec spec;
  spec.format = "npz";
  spec.path = npy_dir() + "/deflated.npz";  // x: uint8 (4, 2, 3); y: float32 (4, 2)
  spec.labels_array = "y";
  spec.repeat = false;
  spec.prefetch = 0;
  spec.where = "job.yaml:3:3";
  InputOptions options;
  options.global_batch = 4;
  options.name = "data.train";
  options.input_names = {"x", "y"};
  options.extra_feature_dtypes = {DType::i32};
  auto input = make_input(spec, options);
  REQUIRE_MESSAGE(input.ok(), input.error().message);
  auto b = (*input)->next();
  REQUIRE_FALSE(b.ok());
  CHECK(b.error().kind == ErrorKind::kData);
  CHECK(b.error().message == "job.yaml:3:3: data.train: " + npy_dir() +
                                 "/deflated.npz: array \"y\", row 0, position 0: 0.18518938 is not a token id "
                                 "(model.inputs.y.dtype is int32, so features must be whole numbers in int32's range)");
  // value_place() names the example where the input cannot say.
  CHECK(value_place(**input, 2, ExampleValue{.input = 5, .position = 1}) == "example 2 of the source, position 1");
  CHECK(value_place(**input, 2, ExampleValue{.label = true}) == npy_dir() + "/deflated.npz: array \"y\", row 2");
}

}  // namespace
}  // namespace dtrain
