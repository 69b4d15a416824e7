// Image bytes as the pipeline decodes them: PNG and JPEG to a fixed
// h x w x c (the job's shape), the JPEG header, and the streaming path's
// windowed JPEG decode (random_resized_crop / resize_center_crop). Selector
// byte: bit 0 channels 1 or 3, bits 1-2 size 1, 2, 8 or 28, bit 3 fast DCT.
// Data errors only, never a throw; libjpeg's and libpng's own error exits
// must come back as errors.
#include <string>
#include <vector>

#include "datasets/example_jpeg.hpp"
#include "datasets/example_png.hpp"
#include "datasets/jpeg_window.hpp"
#include "tests/fuzz/fuzz_util.hpp"

using namespace dtrain;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  const uint8_t selector = fuzz::take_selector(input);
  const int64_t c = (selector & 1) ? 3 : 1;
  const int64_t sizes[] = {1, 2, 8, 28};
  const int64_t hw = sizes[(selector >> 1) & 3];
  std::vector<float> out(static_cast<size_t>(hw * hw * c));
  Status png = decode_png(input, hw, hw, c, out.data(), "fuzz.png");
  if (!png.ok()) fuzz::expect_kind(png.error(), ErrorKind::kData, "decode_png");
  Status jpeg = decode_jpeg(input, hw, hw, c, out.data(), "fuzz.jpg");
  if (!jpeg.ok()) fuzz::expect_kind(jpeg.error(), ErrorKind::kData, "decode_jpeg");
  auto header = read_jpeg_header(input, "fuzz.jpg");
  fuzz::expect_ok_or(header, ErrorKind::kData, "read_jpeg_header");
  if (!header.ok() || header->h <= 0 || header->w <= 0 || header->h * header->w > (int64_t{1} << 26)) return 0;
  // The central half of the image resized to hw x hw, all of it kept.
  JpegResample r;
  r.box = CropBox{header->h / 4, header->w / 4, std::max<int64_t>(header->h / 2, 1), std::max<int64_t>(header->w / 2, 1)};
  r.grid_h = r.grid_w = hw;
  r.keep = CropBox{0, 0, hw, hw};
  std::vector<uint8_t> pixels(static_cast<size_t>(hw * hw * c)), scratch;
  Status window = decode_jpeg_resampled(input, *header, c, r, (selector & 8) != 0, pixels.data(), scratch, "fuzz.jpg");
  if (!window.ok()) fuzz::expect_kind(window.error(), ErrorKind::kData, "decode_jpeg_resampled");
  return 0;
}
