// libjpeg decoding of JPEG-encoded image features. libjpeg reports fatal
// errors through error_exit, which must not return: we longjmp back to
// decode_jpeg, whose frame holds no objects with destructors across the jump.
#include "datasets/example_jpeg.hpp"

#include <fmt/format.h>

#include <csetjmp>
#include <cstdio>
#include <vector>

#include "datasets/jpeg_errors.hpp"

namespace dtrain {
namespace {

// Runs the decode; returns "" on success or libjpeg's message. Plain C types
// only in this frame (see the file comment).
const char* run_decode(const unsigned char* data, unsigned long size, int64_t c, unsigned char* pixels,
                       JDIMENSION* height, JDIMENSION* width, JDIMENSION want_h, JDIMENSION want_w,
                       JpegErrors* err) {
  jpeg_decompress_struct cinfo;
  cinfo.err = use_jpeg_errors(err);
  if (setjmp(err->jump) != 0) {
    jpeg_destroy_decompress(&cinfo);
    return err->message;
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, data, size);
  jpeg_read_header(&cinfo, TRUE);
  cinfo.out_color_space = c == 1 ? JCS_GRAYSCALE : JCS_RGB;
  cinfo.dct_method = JDCT_ISLOW;
  // The size is checked before jpeg_start_decompress, which allocates for
  // the whole image (a multi-scan file's coefficients: gigabytes for a
  // header that claims 65500 x 65500).
  jpeg_calc_output_dimensions(&cinfo);
  *height = cinfo.output_height;
  *width = cinfo.output_width;
  if (cinfo.output_height != want_h || cinfo.output_width != want_w) {
    jpeg_destroy_decompress(&cinfo);
    return nullptr;  // size mismatch: the caller reports it
  }
  jpeg_start_decompress(&cinfo);
  const size_t row = static_cast<size_t>(cinfo.output_width) * static_cast<size_t>(cinfo.output_components);
  while (cinfo.output_scanline < cinfo.output_height) {
    JSAMPROW line = pixels + row * cinfo.output_scanline;
    jpeg_read_scanlines(&cinfo, &line, 1);
  }
  jpeg_finish_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  return "";
}

}  // namespace

Status decode_jpeg(std::string_view jpeg, int64_t h, int64_t w, int64_t c, float* out, const std::string& where) {
  std::vector<unsigned char> pixels(static_cast<size_t>(h * w * c));
  JpegErrors err{};
  JDIMENSION height = 0, width = 0;
  const char* failure = run_decode(reinterpret_cast<const unsigned char*>(jpeg.data()), jpeg.size(), c,
                                   pixels.data(), &height, &width, static_cast<JDIMENSION>(h),
                                   static_cast<JDIMENSION>(w), &err);
  if (failure == nullptr) {
    return data_error(fmt::format("{}: JPEG is {}x{} (height x width) but the shape needs {}x{}", where, height,
                                  width, h, w));
  }
  if (*failure != '\0') return data_error(fmt::format("{}: not a valid JPEG image ({})", where, failure));
  for (size_t i = 0; i < pixels.size(); ++i) out[i] = static_cast<float>(pixels[i]);
  return {};
}

}  // namespace dtrain
