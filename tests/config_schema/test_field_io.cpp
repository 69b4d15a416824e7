// Field tables through config_schema/field_io: one table per struct reads
// the YAML, writes the resolved JSON and describes the schema.
#include <doctest.h>

#include "config_schema/field_io.hpp"

namespace dtrain {
namespace {

struct Inner {
  double rate = 0.5;
  std::vector<double> values;
};

struct Outer {
  int64_t count = 3;
  std::string count_where;  // where count was read from
  std::optional<double> limit;
  std::vector<int64_t> window{2, 2};
  std::optional<int64_t> width;
  bool on = false;
  Inner inner;
  std::optional<Inner> maybe;
};

std::span<const Field> inner_fields() {
  static const Field kFields[] = {
      field<&Inner::rate>("rate", "A rate.").above(0).below(1),
      field<&Inner::values>("values", "Some numbers."),
  };
  return kFields;
}

std::span<const Field> outer_fields() {
  static const Field kFields[] = {
      located<&Outer::count_where>(field<&Outer::count>("count", "How many.").min(1)),
      field<&Outer::limit>("limit", "A bound; null: none.").above(0),
      field<&Outer::window>("window", "An integer or [h, w].").size2().follows("size2"),
      field<&Outer::width>("width", "Optional width.").min(1),
      field<&Outer::on>("on", "Shown only when true.").hidden_at_default(),
      field_struct<&Outer::inner>("inner", "Nested.", inner_fields),
      field_optional_struct<&Outer::maybe>("maybe", "Nested or null.", inner_fields),
  };
  return kFields;
}

TEST_CASE("field tables: read, written back and described from one table") {
  auto node = parse_yaml("count: 7\nlimit: 2.5\nwindow: 3\ninner: {values: [1, 2.5]}\n", "t.yaml");
  REQUIRE(node.ok());
  Outer o;
  read_fields(*node, outer_fields(), &o);
  CHECK(o.count == 7);
  CHECK(o.count_where == "t.yaml:1:8");  // the value's place, kept by located<>
  CHECK(o.limit == std::optional<double>(2.5));
  CHECK(o.window == std::vector<int64_t>{3, 3});  // an integer n is [n, n]
  CHECK_FALSE(o.width.has_value());
  CHECK(o.inner.rate == 0.5);  // not given: the default stays
  CHECK(o.inner.values == std::vector<double>{1.0, 2.5});
  CHECK_FALSE(o.maybe.has_value());  // not given: null
  auto with_maybe = parse_yaml("maybe: {rate: 0.25}\n", "t.yaml");
  REQUIRE(with_maybe.ok());
  Outer m;
  read_fields(*with_maybe, outer_fields(), &m);
  REQUIRE(m.maybe.has_value());
  CHECK(m.maybe->rate == 0.25);
  Json mj = Json::object();
  write_fields(outer_fields(), &m, nullptr, "", mj);
  CHECK(mj["maybe"].dump() == R"({"rate":0.25,"values":[]})");

  const Outer defaults;
  Json written = Json::object();
  write_fields(outer_fields(), &o, &defaults, "", written);
  CHECK(written.dump() ==
        R"({"count":7,"limit":2.5,"window":[3,3],"width":null,"inner":{"rate":0.5,"values":[1.0,2.5]},"maybe":null})");
  o.on = true;
  written = Json::object();
  write_fields(outer_fields(), &o, &defaults, "", written);
  CHECK(written["on"] == true);  // hidden at its default only

  Json properties = Json::object(), required = Json::array();
  fields_schema(outer_fields(), &defaults, properties, required);
  CHECK(required.empty());
  CHECK(properties["count"].dump() == R"({"type":"integer","minimum":1,"description":"How many.","default":3})");
  CHECK(properties["limit"].dump() ==
        R"({"type":["number","null"],"exclusiveMinimum":0,"description":"A bound; null: none.","default":null})");
  CHECK(properties["window"].dump() ==
        R"({"$ref":"#/$defs/size2","description":"An integer or [h, w].","default":2})");
  CHECK(properties["inner"].dump() ==
        R"({"type":"object","description":"Nested.","default":{},"properties":{"rate":{"type":"number",)"
        R"("exclusiveMinimum":0,"exclusiveMaximum":1,"description":"A rate.","default":0.5},"values":{"type":"array",)"
        R"("items":{"type":"number"},"description":"Some numbers.","default":[]}},"additionalProperties":false})");
  CHECK(properties["maybe"]["type"] == Json::array({"object", "null"}));
  CHECK(properties["maybe"]["default"].is_null());
  CHECK(properties["maybe"]["properties"]["rate"]["default"] == 0.5);
}

// The columns a job section needs beyond a plain value: options kept in the
// struct but written as a mapping of their own, a codec's value, the place of
// a mapping, a role's own defaults, "when" and a documented default.
struct Source {
  std::string where;
  std::string path;
  bool repeat = true;
  int64_t threads = 0;  // 0: auto
  int64_t shards = 1;   // written under group:
};

std::span<const Field> group_fields() {
  static const Field kFields[] = {field<&Source::shards>("shards", "Shards.").min(1)};
  return kFields;
}

std::span<const Field> source_fields() {
  static const Field kFields[] = {
      custom<&Source::path>("path", "A file.", "job_path")
          .shaped(R"({"type": "string"})")
          .documented_default("null")
          .shown_when([](const void* o) { return !static_cast<const Source*>(o)->path.empty(); }),
      field<&Source::repeat>("repeat", "Repeat."),
      custom<&Source::threads>("threads", "auto or a count.", "auto_int").shaped(R"({"enum": ["auto"]})"),
      field_group<Source>("group", "A group.", group_fields),
  };
  return kFields;
}

struct Sources {
  std::optional<Source> train, eval;
};

std::span<const Field> sources_fields() {
  static const Field kFields[] = {
      placed<&Source::where>(field_optional_struct<&Sources::train>("train", "Train.", source_fields)),
      placed<&Source::where>(field_optional_struct<&Sources::eval>("eval", "Eval.", source_fields)
                                 .made_by([](void* member) -> void* {
                                   Source& s = static_cast<std::optional<Source>*>(member)->emplace();
                                   s.repeat = false;
                                   return &s;
                                 })),
  };
  return kFields;
}

TEST_CASE("field tables: groups, codecs, places, roles' defaults and the when column") {
  auto node = parse_yaml("train: {path: a.csv, threads: 3, group: {shards: 4}}\neval: {threads: auto}\n", "t.yaml");
  REQUIRE(node.ok());
  Sources s;
  read_fields(*node, sources_fields(), &s, FieldReading{nullptr, "/data/jobs"});
  REQUIRE(s.train);
  REQUIRE(s.eval);
  CHECK(s.train->where == "t.yaml:1:8");             // the mapping's place, kept by placed<>
  CHECK(s.train->path == "/data/jobs/a.csv");        // job_path: resolved against the job's directory
  CHECK(s.train->threads == 3);
  CHECK(s.train->shards == 4);                       // group: a member of the same struct
  CHECK(s.train->repeat);
  CHECK_FALSE(s.eval->repeat);                       // made_by: eval's own default
  CHECK(s.eval->threads == 0);                       // "auto"
  Json j = Json::object();
  write_fields(sources_fields(), &s, nullptr, "", j);
  CHECK(j["train"].dump() == R"({"path":"/data/jobs/a.csv","repeat":true,"threads":3,"group":{"shards":4}})");
  CHECK(j["eval"].dump() == R"({"repeat":false,"threads":"auto","group":{"shards":1}})");  // no path: not written
  const Source defaults;
  Json properties = Json::object(), required = Json::array();
  fields_schema(source_fields(), &defaults, properties, required);
  CHECK(properties["path"]["default"].is_null());    // documented, not the struct's ""
  CHECK(properties["threads"]["default"] == "auto");  // the codec writes the default
  CHECK(properties["group"]["properties"]["shards"]["default"] == 1);
}

TEST_CASE("field tables: a codec that does not exist is reported") {
  CHECK_THROWS_AS(field_codec("no_such_codec"), std::logic_error);
  for (const FieldCodec& c : field_codecs()) CHECK(&field_codec(c.name) == &c);
}

}  // namespace
}  // namespace dtrain
