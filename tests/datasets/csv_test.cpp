// CSV source: RFC 4180 quoting, header / no header, label and feature columns
// by name or index, reshape, and every error with its line:column pinned.
#include <doctest.h>

#include "data_test_util.hpp"
#include "datasets/csv_examples.hpp"
#include "datasets/pipeline.hpp"
#include "datasets/source.hpp"
#include "datasets/tabular.hpp"

namespace dtrain {
namespace {

using data_testing::TempDir;

DataSourceSpec csv_spec(const std::string& path) {
  DataSourceSpec s;
  s.format = "csv";
  s.path = path;
  s.repeat = false;
  s.prefetch = 0;
  return s;
}

// The batch of every row of `input`.
Batch all_rows(Result<std::unique_ptr<Input>>& input) {
  REQUIRE_MESSAGE(input.ok(), input.error().message);
  auto b = (*input)->next();
  REQUIRE(b.ok());
  REQUIRE(b->has_value());
  return std::move(**b);
}

// Loads `text` as data.csv with `spec` (path filled in) and returns all rows
// as one batch, held (stream: false) and read as training goes (stream:
// true): the two must give the same batch.
Batch load(const TempDir& tmp, const std::string& text, DataSourceSpec spec) {
  data_testing::write_text(tmp.file("data.csv"), text);
  spec.path = "data.csv";
  spec.stream = false;
  auto held = make_input(spec, InputOptions{tmp.dir(), 1000, 0});
  Batch b = all_rows(held);
  spec.stream = true;
  auto streamed = make_input(spec, InputOptions{tmp.dir(), 1000, 0});
  const Batch s = all_rows(streamed);
  CHECK(s.features.shape() == b.features.shape());
  CHECK(s.features.to_vector() == b.features.to_vector());
  CHECK(s.labels.to_vector() == b.labels.to_vector());
  CHECK(s.ids == b.ids);
  CHECK(s.weights.numel() == b.weights.numel());
  if (b.weights.numel() > 0) CHECK(s.weights.to_vector() == b.weights.to_vector());
  REQUIRE(s.extra_features.size() == b.extra_features.size());
  for (size_t k = 0; k < b.extra_features.size(); ++k) {
    CHECK(s.extra_features[k].to_vector() == b.extra_features[k].to_vector());
  }
  return b;
}

// The error of loading `text` as data.csv with `spec`: the same held and
// read as training goes.
Error load_error(const TempDir& tmp, const std::string& text, DataSourceSpec spec) {
  data_testing::write_text(tmp.file("data.csv"), text);
  spec.path = tmp.file("data.csv");
  spec.stream = false;
  auto input = make_input(spec, InputOptions{"", 1000, 0});
  REQUIRE_FALSE(input.ok());
  spec.stream = true;
  auto streamed = make_input(spec, InputOptions{"", 1000, 0});
  REQUIRE_FALSE(streamed.ok());
  CHECK(streamed.error().message == input.error().message);
  CHECK(streamed.error().kind == input.error().kind);
  return input.error();
}

TEST_CASE("csv: header, label defaults to the last column, features the rest") {
  TempDir tmp;
  const Batch b = load(tmp, "x1,x2,y\n1,2,0\n3.5,-4e1,1\n", csv_spec(""));
  CHECK(b.features.shape() == Shape{2, 2});
  CHECK(b.features.to_vector() == std::vector<float>{1, 2, 3.5f, -40});
  CHECK(b.labels.shape() == Shape{2});
  CHECK(b.labels.to_vector() == std::vector<float>{0, 1});
  CHECK(b.ids == std::vector<int64_t>{0, 1});
}

TEST_CASE("csv: RFC 4180 quoting: delimiters, doubled quotes and newlines inside quotes, CRLF, blank lines") {
  TempDir tmp;
  DataSourceSpec spec = csv_spec("");
  spec.label_column = "the \"label\"";
  spec.columns = {"a,b", "c"};
  const std::string text =
      "\"a,b\",\"the \"\"label\"\"\",\"c\r\nd\",c\r\n"
      "\r\n"
      "\"1\", 2 ,\"3\",4\r\n"
      "+5,6,7,8\n"
      "\n";
  const Batch b = load(tmp, text, spec);
  CHECK(b.features.to_vector() == std::vector<float>{1, 4, 5, 8});
  CHECK(b.labels.to_vector() == std::vector<float>{2, 6});
}

TEST_CASE("csv: no header: columns by 0-based index, other delimiter, reshape") {
  TempDir tmp;
  DataSourceSpec spec = csv_spec("");
  spec.header = false;
  spec.delimiter = ";";
  spec.label_column = "0";
  spec.feature_shape = {2, 2, 1};
  const Batch b = load(tmp, "9;1;2;3;4\n8;5;6;7;8\n", spec);
  CHECK(b.features.shape() == Shape{2, 2, 2, 1});
  CHECK(b.features.to_vector() == std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8});
  CHECK(b.labels.to_vector() == std::vector<float>{9, 8});

  spec.columns = {"4", "2"};
  spec.feature_shape = {};
  const Batch c = load(tmp, "9;1;2;3;4\n8;5;6;7;8\n", spec);
  CHECK(c.features.to_vector() == std::vector<float>{4, 2, 8, 6});
}

TEST_CASE("csv: a header name that looks like a number is matched as a name first") {
  TempDir tmp;
  DataSourceSpec spec = csv_spec("");
  spec.label_column = std::string("0");  // (not = "0": GCC 12 -O3 gives a false -Wrestrict)
  const Batch b = load(tmp, "7,0,5\n1,2,3\n", spec);  // column named "0" is the second
  CHECK(b.labels.to_vector() == std::vector<float>{2});
  CHECK(b.features.to_vector() == std::vector<float>{1, 3});
}

TEST_CASE("csv errors: numbers, ragged rows and quoting name file:line:field") {
  TempDir tmp;
  const std::string p = tmp.file("data.csv");
  Error e = load_error(tmp, "x1,x2,y\n1,2,0\n1,abc,0\n", csv_spec(""));
  CHECK(e.kind == ErrorKind::kData);
  CHECK(e.message == p + ":3:2: cannot parse \"abc\" as a number (column \"x2\"); if the column holds names, give "
                         "it type category in columns");

  // The line counts the newline inside the earlier quoted field.
  e = load_error(tmp, "a,b\n\"1\n\",2\n3,\n", csv_spec(""));
  CHECK(e.message == p + ":4:2: missing label \"\" (column \"b\")");
  e = load_error(tmp, "a,b\n1,2\n,3\n", csv_spec(""));
  CHECK(e.message == p + ":3:1: missing value \"\" in number column \"a\"; give the column a fill, e.g. columns: "
                         "[{name: a, fill: mean}] (or median, or a number)");

  DataSourceSpec no_header = csv_spec("");
  no_header.header = false;
  e = load_error(tmp, "1,2\n3,nan\n", no_header);
  CHECK(e.message == p + ":2:2: missing label \"nan\" (column 2)");
  e = load_error(tmp, "NA,2\n3,4\n", no_header);
  CHECK(e.message == p + ":1:1: missing value \"NA\" in number column 1; give the column a fill, e.g. columns: "
                         "[{name: 0, fill: mean}] (or median, or a number)");
  e = load_error(tmp, "1,2,0\n3,inf,1\n", no_header);
  CHECK(e.message == p + ":2:2: cannot parse \"inf\" as a number; if the column holds names, give it type category in "
                         "columns");

  e = load_error(tmp, "a,b,c\n1,2,3\n\n4,5\n", csv_spec(""));
  CHECK(e.kind == ErrorKind::kData);
  CHECK(e.message == p + ":4: row has 2 fields but the header has 3");
  e = load_error(tmp, "1,2\n3,4,5\n", no_header);
  CHECK(e.message == p + ":2: row has 3 fields but the first row has 2");

  e = load_error(tmp, "a,b\n1,\"2\n", csv_spec(""));
  CHECK(e.message == p + ":2:2: unterminated quoted field (no closing '\"' before the end of the file)");
  e = load_error(tmp, "a,b\n1,\"2\"x\n", csv_spec(""));
  CHECK(e.message == p + ":2:2: unexpected 'x' after the closing quote of a quoted field");

  e = load_error(tmp, "", csv_spec(""));
  CHECK(e.message == p + ": no data rows (the file is empty)");
  e = load_error(tmp, "a,b\n", csv_spec(""));
  CHECK(e.message == p + ": no data rows (only a header)");
}

TEST_CASE("csv errors: spec mistakes are config errors") {
  TempDir tmp;
  const std::string p = tmp.file("data.csv");
  DataSourceSpec spec = csv_spec("");
  spec.where = "job.yaml:4:3";
  spec.label_column = "z";
  Error e = load_error(tmp, "x,y\n1,2\n", spec);
  CHECK(e.kind == ErrorKind::kConfig);
  CHECK(e.message == "job.yaml:4:3: data: label_column: \"z\" is not a column of " + p + " (columns: x, y)");

  spec.label_column = "5";
  e = load_error(tmp, "x,y\n1,2\n", spec);
  CHECK(e.message == "job.yaml:4:3: data: label_column: column index 5 is out of range: " + p + " has 2 columns (0-1)");

  spec.header = false;
  spec.label_column = "";
  spec.columns = {"0", "y"};
  e = load_error(tmp, "1,2\n", spec);
  CHECK(e.message == "job.yaml:4:3: data: columns[1]: \"y\" is not a column index, and " + p +
                         " has no header to look names up in (header: false)");

  spec.columns = {};
  spec.feature_shape = {2, 2};
  e = load_error(tmp, "1,2,3\n", spec);
  CHECK(e.message == "job.yaml:4:3: data: feature_shape [2, 2] has 4 elements but 2 feature columns are selected from " + p);

  spec.feature_shape = {};
  spec.delimiter = "::";
  e = load_error(tmp, "1,2,3\n", spec);
  CHECK(e.message == "job.yaml:4:3: data: delimiter must be one character other than a quote or line end, got \"::\"");
}

// A table as users have it: a BOM, CRLF, a quoted field, categories,
// missing values and a label column of names.
const std::string kTable =
    "\xEF\xBB\xBF" "age,color,size,species\r\n"
    "30,red,1.5,setosa\r\n"
    "NA,blue,2.5,virginica\r\n"
    "50, red ,,versicolor\r\n"
    "20,\"green\",3.5,setosa\r\n"
    "40,?,4.5,virginica\r\n";

DataSourceSpec typed_spec() {
  DataSourceSpec spec = csv_spec("");
  spec.label_column = "species";
  CsvColumnSpec age("age"), color("color"), size("size");
  age.fill = "mean";
  color.type = "category";
  size.fill = "median";
  spec.columns = {age, color, size};
  return spec;
}

TEST_CASE("csv typed columns: one-hot categories by frequency, fills from the data, class names from the labels") {
  TempDir tmp;
  data_testing::write_text(tmp.file("data.csv"), kTable);
  DataSourceSpec spec = typed_spec();
  spec.path = "data.csv";
  auto fitted = fit_csv_source(spec, SourceContext{tmp.dir(), "p: "});
  REQUIRE_MESSAGE(fitted.ok(), fitted.error().message);
  const TabularPreprocessing& p = *fitted;
  REQUIRE(p.columns.size() == 3);
  CHECK(*p.columns[0].fill_number == doctest::Approx(35.0));  // (30 + 50 + 20 + 40) / 4
  CHECK(p.columns[1].categories == std::vector<std::string>{"red", "blue", "green"});  // red twice; then by name
  CHECK(p.columns[1].fill_id == 0);  // a missing category is the unknown one
  CHECK(*p.columns[2].fill_number == doctest::Approx(3.0));  // median of 1.5, 2.5, 3.5, 4.5
  CHECK(p.classes == std::vector<std::string>{"setosa", "versicolor", "virginica"});
  CHECK(p.width() == 1 + 4 + 1);
  CHECK(p.worth_saving());
  CHECK(p.describe() ==
        "3 columns -> 6 features: age number (fill mean 35), color category (3 values + unknown), size number (fill "
        "median 3); label \"species\": 3 classes (setosa, versicolor, virginica)");

  const Batch b = load(tmp, kTable, spec);
  CHECK(b.features.shape() == Shape{5, 6});
  //                                       age  unk red blue green size
  CHECK(b.features.to_vector() == std::vector<float>{30, 0, 1, 0, 0, 1.5f,    //
                                                     35, 0, 0, 1, 0, 2.5f,    //
                                                     50, 0, 1, 0, 0, 3.0f,    //
                                                     20, 0, 0, 0, 1, 3.5f,    //
                                                     40, 1, 0, 0, 0, 4.5f});
  CHECK(b.labels.to_vector() == std::vector<float>{0, 2, 1, 0, 2});
}

TEST_CASE("csv typed columns: other data read with data.train's fit: unseen categories are unknown, fills stay") {
  TempDir tmp;
  data_testing::write_text(tmp.file("train.csv"), kTable);
  DataSourceSpec spec = typed_spec();
  spec.path = "train.csv";
  auto fitted = fit_csv_source(spec, SourceContext{tmp.dir(), "p: "});
  REQUIRE(fitted.ok());
  auto fit = std::make_shared<const TabularPreprocessing>(*fitted);

  // Columns in another order, an unseen colour, missing values, no label.
  data_testing::write_text(tmp.file("new.csv"), "size,color,age\n,purple,\n9,blue,1\n");
  spec.path = "new.csv";
  SourceContext ctx{tmp.dir(), "p: "};
  ctx.tabular = fit;
  ctx.without_labels = true;
  auto source = load_csv_source(spec, ctx);
  REQUIRE_MESSAGE(source.ok(), source.error().message);
  CHECK((*source)->class_names() == fit->classes);
  const Batch b = (*source)->gather({0, 1}, 1.0f);
  CHECK(b.features.to_vector() == std::vector<float>{35, 1, 0, 0, 0, 3, 1, 0, 0, 1, 0, 9});

  // With labels: a class not seen in training names file:line.
  data_testing::write_text(tmp.file("eval.csv"), "age,color,size,species\n1,red,2,setosa\n1,red,2,daisy\n");
  spec.path = "eval.csv";
  ctx.without_labels = false;
  source = load_csv_source(spec, ctx);
  REQUIRE_FALSE(source.ok());
  CHECK(source.error().kind == ErrorKind::kData);
  CHECK(source.error().message == tmp.file("eval.csv") + ":3:4: label \"daisy\" (column \"species\") is not one of "
                                                         "the 3 classes of data.train: setosa, versicolor, virginica");
}

TEST_CASE("csv typed columns: fills by value, most_frequent, max_categories, explicit classes") {
  TempDir tmp;
  DataSourceSpec spec = csv_spec("");
  spec.label_column = "species";
  CsvColumnSpec age("age"), color("color");
  age.fill = "-1";
  color.type = "category";
  color.fill = "most_frequent";
  color.max_categories = 1;
  spec.columns = {age, color};
  spec.classes = {"virginica", "versicolor", "setosa"};
  const Batch b = load(tmp, kTable, spec);
  //                                       age unk red
  CHECK(b.features.to_vector() == std::vector<float>{30, 0, 1,  //
                                                     -1, 1, 0,  // blue is not among the 1 kept
                                                     50, 0, 1,  //
                                                     20, 1, 0,  //
                                                     40, 0, 1});  // missing: the most frequent, red
  CHECK(b.labels.to_vector() == std::vector<float>{2, 0, 1, 2, 0});
}

TEST_CASE("csv typed columns: the saved form reads back the same") {
  TempDir tmp;
  data_testing::write_text(tmp.file("data.csv"), kTable);
  DataSourceSpec spec = typed_spec();
  spec.path = "data.csv";
  auto fitted = fit_csv_source(spec, SourceContext{tmp.dir(), "p: "});
  REQUIRE(fitted.ok());
  REQUIRE(write_tabular_file(tmp.file("preprocessing.json"), *fitted).ok());
  auto back = read_tabular_file(tmp.file("preprocessing.json"));
  REQUIRE_MESSAGE(back.ok(), back.error().message);
  CHECK(tabular_json(*back) == tabular_json(*fitted));
  CHECK(back->columns[1].id("blue") == 2);
  CHECK(back->columns[1].id("purple") == 0);
  CHECK(tabular_difference(*back, spec.columns, "species", {}, "saved").empty());
  std::vector<CsvColumnSpec> other = spec.columns;
  other[1].type = "number";
  CHECK(tabular_difference(*back, other, "species", {}, "saved") ==
        "column 1: saved has color (category), the job color (number)");

  auto broken = parse_tabular_json("{\"dtrain_preprocessing\": 1, \"format\": \"csv\"}", "x.json");
  REQUIRE_FALSE(broken.ok());
  CHECK(broken.error().message == "x.json: not a dtrain preprocessing file: no \"columns\" list");
}

TEST_CASE("csv text and category id columns: token ids padded, ids as numbers, each column to its input") {
  TempDir tmp;
  const std::string text =
      "review,shop,price,label\n"
      "\"Good, GOOD value\",north,3,a\n"
      "bad,south,4,b\n"
      "NA,north,5,a\n"
      "good value,east,6,b\n";
  data_testing::write_text(tmp.file("data.csv"), text);
  DataSourceSpec spec = csv_spec("data.csv");
  spec.label_column = "label";
  spec.max_length = 3;
  spec.na_values = {"NA"};
  CsvColumnSpec review("review"), shop("shop"), price("price");
  review.type = "text";
  shop.type = "category";
  shop.encoding = "id";
  spec.columns = {review, shop, price};
  auto fitted = fit_csv_source(spec, SourceContext{tmp.dir(), "p: "});
  REQUIRE_MESSAGE(fitted.ok(), fitted.error().message);
  const TabularPreprocessing& p = *fitted;
  // good 2, value 2, bad 1: by count, ties by token.
  CHECK(p.columns[0].tokens->tokens() == std::vector<std::string>{"good", "value", "bad"});
  CHECK(p.columns[1].categories == std::vector<std::string>{"north", "east", "south"});
  CHECK(p.width() == 3 + 1 + 1);
  CHECK(p.id_count("") == 5);  // the text's 5 ids beat the shop's 4
  CHECK(p.describe() ==
        "3 columns -> 5 features: review text (word tokens, 3 ids: <pad>, <unk> + 3), shop category id (3 values + "
        "unknown), price number; label \"label\": 2 classes (a, b)");
  const Batch b = load(tmp, text, spec);
  //  review ids (good 2, value 3, bad 4; <pad> 0)  shop id (north 1, east 2, south 3)  price
  CHECK(b.features.to_vector() == std::vector<float>{2, 2, 3, 1, 3,  //
                                                     4, 0, 0, 3, 4,  //
                                                     0, 0, 0, 1, 5,  // NA: no tokens
                                                     2, 3, 0, 2, 6});

  // A model of two inputs: the review to "words", the shop and price to "meta".
  spec.columns[0].input = "words";
  spec.columns[1].input = "meta";
  spec.columns[2].input = "meta";
  SourceContext ctx{tmp.dir(), "p: "};
  ctx.inputs = {"words", "meta"};
  auto two = load_csv_source(spec, ctx);
  REQUIRE_MESSAGE(two.ok(), two.error().message);
  CHECK((*two)->feature_shape() == Shape{3});
  CHECK((*two)->extra_feature_shapes() == std::vector<Shape>{Shape{2}});
  const Batch t = (*two)->gather({1, 3}, 1.0f);
  CHECK(t.features.to_vector() == std::vector<float>{4, 0, 0, 2, 3, 0});
  CHECK(t.extra_features.at(0).to_vector() == std::vector<float>{3, 4, 2, 6});
  ctx.inputs = {"words", "other"};
  auto wrong = load_csv_source(spec, ctx);
  REQUIRE_FALSE(wrong.ok());
  CHECK(wrong.error().message == "p: columns[1] (shop): input \"meta\" is not one of model.inputs; give each column "
                                 "the model input it feeds: input: one of words, other");

  // The saved form keeps the vocabulary, the encoding and the inputs.
  auto fitted_two = fit_csv_source(spec, SourceContext{tmp.dir(), "p: "});
  REQUIRE(fitted_two.ok());
  REQUIRE(write_tabular_file(tmp.file("preprocessing.json"), *fitted_two).ok());
  auto back = read_tabular_file(tmp.file("preprocessing.json"));
  REQUIRE_MESSAGE(back.ok(), back.error().message);
  CHECK(tabular_json(*back) == tabular_json(*fitted_two));
  CHECK(back->columns[0].tokens->id("value") == 3);
  CHECK(back->inputs() == std::vector<std::string>{"words", "meta"});
  CHECK(back->width("meta") == 2);
  CHECK(back->id_count("meta") == 4);
  CHECK(tabular_difference(*back, spec.columns, "label", {}, "saved").empty());
  CHECK(tabular_text_difference(*back, spec, "saved").empty());
  DataSourceSpec longer = spec;
  longer.max_length = 8;
  CHECK(tabular_text_difference(*back, longer, "saved") == "text column review: saved has max_length 3, the job 8");
}

TEST_CASE("csv typed columns: errors name the place and say what to do") {
  TempDir tmp;
  const std::string p = tmp.file("data.csv");
  DataSourceSpec spec = csv_spec("");
  spec.label_column = "y";
  Error e = load_error(tmp, "x,y\n1,a\n2,3\n", spec);
  CHECK(e.kind == ErrorKind::kData);
  CHECK(e.message == p + ": the label column \"y\" holds numbers (\"3\" at line 3) and names (\"a\" at line 2); give "
                         "classes: [...] to read every label as a class name, or correct the file");
  e = load_error(tmp, "x,y\n1,a\n2,\n", spec);
  CHECK(e.message == p + ":3:2: missing label \"\" (column \"y\")");

  CsvColumnSpec x("x");
  x.fill = "average";
  spec.columns = {x};
  e = load_error(tmp, "x,y\n1,a\n", spec);
  CHECK(e.kind == ErrorKind::kConfig);
  CHECK(e.message == "data: columns[0]: fill \"average\" of number column \"x\" is not mean, median or a number");
  x.fill = "";
  x.max_categories = 3;
  spec.columns = {x};
  e = load_error(tmp, "x,y\n1,a\n", spec);
  CHECK(e.message == "data: columns[0]: max_categories applies to type category, not number");
}

// Data errors found after loading (a label or id out of the model's range)
// name the line and the field: a feature position names the column holding it
// (a category's one-hot features all name its column), on the line where that
// field begins when a quoted field spans lines.
TEST_CASE("csv: locate names the line, the field and the column of a label or feature") {
  TempDir tmp;
  data_testing::write_text(tmp.file("data.csv"), kTable);
  DataSourceSpec spec = typed_spec();
  spec.path = "data.csv";
  auto source = load_csv_source(spec, SourceContext{tmp.dir(), "p: "});
  REQUIRE_MESSAGE(source.ok(), source.error().message);
  const std::string path = tmp.file("data.csv");
  const ExampleSource& s = **source;
  CHECK(s.locate(1, ExampleValue{}) == path + ":3");
  CHECK(s.locate(1, ExampleValue{.label = true}) == path + ":3:4 (column \"species\")");
  // features: age | unknown red blue green (color) | size
  CHECK(s.locate(2, ExampleValue{.position = 0}) == path + ":4:1 (column \"age\")");
  CHECK(s.locate(2, ExampleValue{.position = 1}) == path + ":4:2 (column \"color\")");
  CHECK(s.locate(2, ExampleValue{.position = 4}) == path + ":4:2 (column \"color\")");
  CHECK(s.locate(4, ExampleValue{.position = 5}) == path + ":6:3 (column \"size\")");
  CHECK(s.locate(4, ExampleValue{.position = 6}) == path + ":6");  // past the features: the row
  CHECK(s.locate(5, ExampleValue{}).empty());                       // no such row

  // No header: columns by 1-based field; a quoted field over two lines moves the fields after it.
  data_testing::write_text(tmp.file("plain.csv"), "1,2,0\n\"3\n\",4,1\n5,6,0\n");
  DataSourceSpec plain = csv_spec("plain.csv");
  plain.header = false;
  auto lines = load_csv_source(plain, SourceContext{tmp.dir(), "p: "});
  REQUIRE_MESSAGE(lines.ok(), lines.error().message);
  const std::string plain_path = tmp.file("plain.csv");
  CHECK((*lines)->locate(1, ExampleValue{.position = 0}) == plain_path + ":2:1 (column 1)");
  CHECK((*lines)->locate(1, ExampleValue{.position = 1}) == plain_path + ":3:2 (column 2)");
  CHECK((*lines)->locate(1, ExampleValue{.label = true}) == plain_path + ":3:3 (column 3)");
  CHECK((*lines)->locate(2, ExampleValue{.position = 1}) == plain_path + ":4:2 (column 2)");
}

TEST_CASE("csv read as training goes: rows read back from the file, a changed file named at its line") {
  TempDir tmp;
  DataSourceSpec spec = typed_spec();
  spec.path = "data.csv";
  spec.stream = true;
  data_testing::write_text(tmp.file("data.csv"), kTable);
  auto source = load_csv_source(spec, SourceContext{tmp.dir(), "p: "});
  REQUIRE_MESSAGE(source.ok(), source.error().message);
  const Batch b = (*source)->gather({4, 0, 4}, 1.0f);
  CHECK(b.features.to_vector() == std::vector<float>{40, 1, 0, 0, 0, 4.5f,  //
                                                     30, 0, 1, 0, 0, 1.5f,  //
                                                     40, 1, 0, 0, 0, 4.5f});
  CHECK(b.labels.to_vector() == std::vector<float>{2, 0, 2});

  // The same bytes, a number made a name: the row's field is named.
  std::string changed = kTable;
  const size_t at = changed.find("50,");
  REQUIRE(at != std::string::npos);
  changed.replace(at, 2, "xy");
  data_testing::write_text(tmp.file("data.csv"), changed);
  try {
    (*source)->gather({2}, 1.0f);
    FAIL("a changed row was read");
  } catch (const ErrorException& e) {
    CHECK(e.error.kind == ErrorKind::kData);
    CHECK(e.error.message == tmp.file("data.csv") + ":4:1 (column \"age\"): \"xy\" is not the value read at start-up: "
                                                    "the file changed since training started; restart the job");
  }
  // Cut short: the row is gone.
  data_testing::write_text(tmp.file("data.csv"), kTable.substr(0, 30));
  try {
    (*source)->gather({4}, 1.0f);
    FAIL("a row past the end was read");
  } catch (const ErrorException& e) {
    CHECK(e.error.message == tmp.file("data.csv") + ":6: the file changed since training started (the file is shorter "
                                                    "than when it was read); restart the job");
  }
}

TEST_CASE("csv read as training goes: a gzip file cannot be, and says so") {
  TempDir tmp;
  data_testing::write_text(tmp.file("data.csv.gz"), "");
  DataSourceSpec spec = csv_spec("data.csv.gz");
  spec.stream = true;
  auto source = load_csv_source(spec, SourceContext{tmp.dir(), "p: "});
  REQUIRE_FALSE(source.ok());
  CHECK(source.error().kind == ErrorKind::kConfig);
  CHECK(source.error().message == "p: stream: true reads the rows of " + tmp.file("data.csv.gz") +
                                      " as training goes, which a gzip file does not allow; decompress it (gunzip), "
                                      "or use stream: false");
}

TEST_CASE("csv: RowLines keeps the rows whose line does not follow the last") {
  RowLines lines;
  for (int64_t line : {2, 3, 4, 7, 8, 12}) lines.add(line);
  CHECK(lines.size() == 6);
  std::vector<int64_t> got;
  for (int64_t r = 0; r < lines.size(); ++r) got.push_back(lines.line(r));
  CHECK(got == std::vector<int64_t>{2, 3, 4, 7, 8, 12});
}

}  // namespace
}  // namespace dtrain
