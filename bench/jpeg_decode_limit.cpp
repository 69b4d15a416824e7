// jpeg_decode_limit: libjpeg-turbo's own full-size decode speed on the JPEGs
// of TFRecord shards, one thread: the ceiling of any pipeline that decodes
// them whole (bench_images.py reports images/s per core against it).
// Verifies before it times: each image decodes to its header's size with 3
// components, and one JSON line gives the pixel count and mean to compare.
#include <CLI/CLI.hpp>
#include <jpeglib.h>

#include <chrono>
#include <csetjmp>
#include <cstdio>
#include <string>
#include <vector>

#include "bench/example_reader.hpp"

namespace {

struct JumpError {
  jpeg_error_mgr mgr;
  std::jmp_buf jump;
};

extern "C" void jump_on_error(j_common_ptr cinfo) { std::longjmp(reinterpret_cast<JumpError*>(cinfo->err)->jump, 1); }
extern "C" void ignore_message(j_common_ptr, int) {}

// Decodes `jpeg` to RGB in `pixels` (resized as needed) at full size with
// the accurate integer DCT (as dtrain decodes). Returns false on a libjpeg
// error or when the output is not the header's size with 3 components.
// Only plain C objects live in this frame across the longjmp.
bool decode_rgb(const std::string& jpeg, std::vector<unsigned char>& pixels, JDIMENSION* h, JDIMENSION* w) {
  jpeg_decompress_struct cinfo;
  JumpError err;
  cinfo.err = jpeg_std_error(&err.mgr);
  err.mgr.error_exit = jump_on_error;
  err.mgr.emit_message = ignore_message;
  if (setjmp(err.jump) != 0) {
    jpeg_destroy_decompress(&cinfo);
    return false;
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, reinterpret_cast<const unsigned char*>(jpeg.data()), jpeg.size());
  jpeg_read_header(&cinfo, TRUE);
  cinfo.out_color_space = JCS_RGB;
  cinfo.dct_method = JDCT_ISLOW;
  jpeg_start_decompress(&cinfo);
  *h = cinfo.output_height;
  *w = cinfo.output_width;
  const bool sized = cinfo.output_components == 3 && *h == cinfo.image_height && *w == cinfo.image_width;
  const size_t row = static_cast<size_t>(*w) * 3;
  if (pixels.size() < row * *h) pixels.resize(row * *h);
  while (sized && cinfo.output_scanline < cinfo.output_height) {
    JSAMPROW line = pixels.data() + row * cinfo.output_scanline;
    if (jpeg_read_scanlines(&cinfo, &line, 1) != 1) break;
  }
  const bool whole = sized && cinfo.output_scanline == cinfo.output_height;
  if (whole) jpeg_finish_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  return whole;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"libjpeg-turbo full-size decode speed on the JPEGs of TFRecord shards, one thread", "jpeg_decode_limit"};
  std::string files, image = "image", label = "label";
  double min_seconds = 5;
  app.add_option("files", files, "TFRecord files (a glob)")->required();
  app.add_option("--image", image, "the JPEG bytes feature (default image)");
  app.add_option("--label", label, "the int64 label feature (default label)");
  app.add_option("--min-seconds", min_seconds, "decode whole passes until this much time has passed (default 5)");
  CLI11_PARSE(app, argc, argv);

  std::vector<dtrain::bench::RawExample> examples;
  try {
    examples = dtrain::bench::read_examples(files, image, label);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "jpeg_decode_limit: %s\n", e.what());
    return 3;
  }
  if (examples.empty()) {
    std::fprintf(stderr, "jpeg_decode_limit: %s: no records\n", files.c_str());
    return 3;
  }
  // Verification pass (untimed): sizes and the mean pixel value.
  std::vector<unsigned char> pixels;
  double pixel_count = 0, pixel_sum = 0, bytes = 0;
  for (size_t i = 0; i < examples.size(); ++i) {
    JDIMENSION h = 0, w = 0;
    if (!decode_rgb(examples[i].image, pixels, &h, &w)) {
      std::fprintf(stderr, "jpeg_decode_limit: record %zu: not a whole RGB JPEG of its header's size\n", i);
      return 3;
    }
    const size_t n = static_cast<size_t>(h) * w * 3;
    uint64_t sum = 0;
    for (size_t k = 0; k < n; ++k) sum += pixels[k];
    pixel_sum += static_cast<double>(sum);
    pixel_count += static_cast<double>(h) * w;
    bytes += static_cast<double>(examples[i].image.size());
  }
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  int64_t passes = 0;
  double seconds = 0;
  do {
    for (const auto& e : examples) {
      JDIMENSION h = 0, w = 0;
      if (!decode_rgb(e.image, pixels, &h, &w)) return 1;  // decoded above: cannot fail
    }
    ++passes;
    seconds = std::chrono::duration<double>(Clock::now() - start).count();
  } while (seconds < min_seconds);
  const double decoded = static_cast<double>(passes) * static_cast<double>(examples.size());
  std::printf("{\"images\": %zu, \"passes\": %lld, \"seconds\": %.6f, \"images_per_sec\": %.3f, "
              "\"megapixels_per_sec\": %.3f, \"pixels_per_pass\": %.0f, \"pixel_mean\": %.6f, "
              "\"jpeg_bytes_per_pass\": %.0f}\n",
              examples.size(), static_cast<long long>(passes), seconds, decoded / seconds,
              static_cast<double>(passes) * pixel_count / 1e6 / seconds, pixel_count, pixel_sum / (pixel_count * 3),
              bytes);
  return 0;
}
