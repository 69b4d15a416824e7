// IDX (MNIST's format, optionally gzip), NPY and NPZ (a zip of .npy, stored
// or deflated): the parsers and the sources a job's data section loads.
// Selector byte (mod 4): 0 IDX images, 1 IDX labels, 2 NPY features, 3 NPZ
// (each zip member parsed, then the archive as a source); bit 2 names the
// IDX file `.gz` (read_data_file looks at the bytes, not the name). Each is
// then loaded as a job's source would be, beside a valid companion file.
// Config or data errors only, never a throw.
#include <string>
#include <vector>

#include "datasets/idx_file.hpp"
#include "datasets/npy_source.hpp"
#include "datasets/npz_file.hpp"
#include "datasets/source.hpp"
#include "tests/fuzz/fuzz_util.hpp"

using namespace dtrain;

namespace {

// Loads a source of `spec` and gathers its first example (the way training reads it).
void load_and_gather(const DataSourceSpec& spec) {
  SourceContext ctx;
  ctx.prefix = "fuzz: ";
  auto source = load_source(spec, ctx);
  if (!source.ok()) {
    if (source.error().kind != ErrorKind::kConfig) fuzz::expect_kind(source.error(), ErrorKind::kData, "load_source");
    return;
  }
  if ((*source)->size() > 0) (void)(*source)->gather({0, (*source)->size() - 1}, 1.0f);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  const uint8_t selector = fuzz::take_selector(input);
  const std::vector<uint8_t> bytes(input.begin(), input.end());
  switch (selector % 4) {
    case 0:
    case 1: {
      const bool images = selector % 4 == 0;
      fuzz::expect_ok_or(parse_idx(bytes, "fuzz.idx", images ? "images" : "labels"), ErrorKind::kData, "parse_idx");
      const std::string path = fuzz::write_scratch((selector & 4) ? "a.idx.gz" : "a.idx", input);
      fuzz::expect_ok_or(read_data_file(path), ErrorKind::kData, "read_data_file");
      // A valid companion: 1-byte labels for whatever count the images give (or 2x2 images for labels).
      std::string other = images ? std::string("\0\0\x08\x01\0\0\0\x02\x01\x02", 10)
                                 : std::string("\0\0\x08\x03\0\0\0\x02\0\0\0\x02\0\0\0\x02", 16) + std::string(8, '\x07');
      const std::string other_path = fuzz::write_scratch("b.idx", other);
      DataSourceSpec spec;
      spec.format = "idx";
      spec.images = images ? path : other_path;
      spec.labels = images ? other_path : path;
      load_and_gather(spec);
      break;
    }
    case 2: {
      fuzz::expect_ok_or(parse_npy(bytes, "fuzz.npy"), ErrorKind::kData, "parse_npy");
      const std::vector<uint8_t> labels = encode_npy_f32(Shape{2}, {0.0f, 1.0f});
      DataSourceSpec spec;
      spec.format = "npy";
      spec.images = fuzz::write_scratch("a.npy", input);
      spec.labels = fuzz::write_scratch("labels.npy", std::string_view(reinterpret_cast<const char*>(labels.data()),
                                                                       labels.size()));
      load_and_gather(spec);
      break;
    }
    case 3: {
      const std::string path = fuzz::write_scratch("a.npz", input);
      auto zip = open_zip(path);
      fuzz::expect_ok_or(zip, ErrorKind::kData, "open_zip");
      if (!zip.ok()) break;
      for (const auto& member : zip->members) {
        auto m = read_zip_member(*zip, member.name);
        fuzz::expect_ok_or(m, ErrorKind::kData, "read_zip_member");
        if (m.ok()) fuzz::expect_ok_or(parse_npy(*m, member.name), ErrorKind::kData, "parse_npy (npz)");
      }
      DataSourceSpec spec;
      spec.format = "npz";
      spec.path = path;
      load_and_gather(spec);
      break;
    }
  }
  return 0;
}
