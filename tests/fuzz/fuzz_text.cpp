// Text data: UTF-8 decoding (overlong forms, surrogates, truncation), the
// saved vocabulary's JSON (model_dir/vocab.json), and a file as a job's text
// source (char or byte units, windows of sequence_length, a held-out part).
// Selector byte: bit 0 unit byte, bits 1-2 sequence_length 1..4, bit 3 a
// holdout of 0.25 read as the holdout split. Data errors only, never a throw.
#include <string>
#include <vector>

#include "datasets/source.hpp"
#include "datasets/text_vocab.hpp"
#include "datasets/utf8.hpp"
#include "tests/fuzz/fuzz_util.hpp"

using namespace dtrain;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  const uint8_t selector = fuzz::take_selector(input);
  std::vector<uint32_t> code_points;
  Utf8Problem problem;
  if (!decode_utf8(reinterpret_cast<const uint8_t*>(input.data()), input.size(), code_points, &problem)) {
    if (problem.reason.empty() || problem.offset >= input.size()) fuzz::fail("decode_utf8: a problem without a place");
  } else {
    std::string again;
    for (uint32_t cp : code_points) again += encode_utf8(cp);
    if (again != input) fuzz::fail("decode_utf8 then encode_utf8 does not give the input back");
  }
  auto vocabulary = parse_vocabulary_json(std::string(input), "vocab.json");
  fuzz::expect_ok_or(vocabulary, ErrorKind::kData, "parse_vocabulary_json");
  if (vocabulary.ok()) {
    auto again = parse_vocabulary_json(vocabulary_json(*vocabulary), "again");
    if (!again.ok() || vocabulary_difference(*vocabulary, "a", *again, "b") != "") {
      fuzz::fail("a vocabulary does not survive vocabulary_json and parse_vocabulary_json");
    }
  }
  DataSourceSpec spec;
  spec.format = "text";
  spec.files = {fuzz::write_scratch("a.txt", input)};
  spec.unit = (selector & 1) ? "byte" : "char";
  spec.sequence_length = 1 + ((selector >> 1) & 3);
  if (selector & 8) {
    spec.holdout = 0.25;
    spec.split = "holdout";
  }
  SourceContext ctx;
  ctx.prefix = "fuzz: ";
  auto source = load_source(spec, ctx);
  if (!source.ok()) {
    if (source.error().kind != ErrorKind::kConfig) fuzz::expect_kind(source.error(), ErrorKind::kData, "load_source");
  } else if ((*source)->size() > 0) {
    (void)(*source)->gather({0, (*source)->size() - 1}, 1.0f);
  }
  return 0;
}
