// CSV: the RFC 4180 tokenizer (quotes, doubled quotes, CRLF, blank lines)
// with the delimiter the selector picks, then the file as a job's csv source
// (header or not, label column by name or last, features reshaped).
// Selector byte: bits 0-1 delimiter (, ; tab |), bit 2 header, bit 3 label
// column "label" (else the last), bit 4 feature_shape [2], bit 5 stream:
// true (the rows read back from the file when gathered). Config or data
// errors only, never a throw.
#include <string>
#include <vector>

#include "datasets/csv_reader.hpp"
#include "datasets/source.hpp"
#include "tests/fuzz/fuzz_util.hpp"

using namespace dtrain;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  const uint8_t selector = fuzz::take_selector(input);
  const char delimiters[] = {',', ';', '\t', '|'};
  const char delimiter = delimiters[selector & 3];
  CsvReader reader(input, delimiter, "fuzz.csv");
  std::vector<std::string> fields;
  for (int records = 0; records < 100000; ++records) {
    auto more = reader.next(fields);
    fuzz::expect_ok_or(more, ErrorKind::kData, "CsvReader::next");
    if (!more.ok() || !*more) break;
    for (size_t i = 0; i < fields.size(); ++i) (void)reader.field_line(i);
  }
  DataSourceSpec spec;
  spec.format = "csv";
  spec.path = fuzz::write_scratch("a.csv", input);
  spec.delimiter = std::string(1, delimiter);
  spec.header = (selector & 4) != 0;
  if (selector & 8) spec.label_column = spec.header ? "label" : "0";
  if (selector & 16) spec.feature_shape = {2};
  spec.stream = (selector & 32) != 0;
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
