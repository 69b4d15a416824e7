// Windowed, DCT-scaled JPEG decoding (see jpeg_window.hpp). libjpeg reports
// fatal errors through error_exit, which must not return: we longjmp back to
// the frames below, which hold only plain C types across the jump.
#include "datasets/jpeg_window.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <csetjmp>
#include <cstdio>

#include "datasets/jpeg_errors.hpp"

namespace dtrain {
namespace {

const char* run_header(const unsigned char* data, unsigned long size, JDIMENSION* h, JDIMENSION* w, JpegErrors* err) {
  jpeg_decompress_struct cinfo;
  cinfo.err = use_jpeg_errors(err);
  if (setjmp(err->jump) != 0) {
    jpeg_destroy_decompress(&cinfo);
    return err->message;
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, data, size);
  jpeg_read_header(&cinfo, TRUE);
  *h = cinfo.image_height;
  *w = cinfo.image_width;
  jpeg_destroy_decompress(&cinfo);
  return "";
}

// Decodes rows y_first..y_last of the image scaled by k/8, columns from
// *x_first (moved down to an iMCU boundary by libjpeg) for *x_count (moved
// up), into `rows` (stride *x_count * c). want_h/want_w: the scaled size
// expected; a mismatch returns "size".
const char* run_window(const unsigned char* data, unsigned long size, int c, int k, bool fast_dct, JDIMENSION want_h,
                       JDIMENSION want_w, JDIMENSION y_first, JDIMENSION y_last, JDIMENSION* x_first,
                       JDIMENSION* x_count, unsigned char* rows, JpegErrors* err) {
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
  cinfo.dct_method = fast_dct ? JDCT_IFAST : JDCT_ISLOW;
  cinfo.scale_num = static_cast<unsigned int>(k);
  cinfo.scale_denom = 8;
  jpeg_calc_output_dimensions(&cinfo);  // checked before jpeg_start_decompress allocates for the whole image
  if (cinfo.output_height != want_h || cinfo.output_width != want_w) {
    jpeg_destroy_decompress(&cinfo);
    return "size";
  }
  jpeg_start_decompress(&cinfo);
  if (*x_first != 0 || *x_count != cinfo.output_width) jpeg_crop_scanline(&cinfo, x_first, x_count);
  if (y_first > 0) jpeg_skip_scanlines(&cinfo, y_first);
  const size_t stride = static_cast<size_t>(*x_count) * static_cast<size_t>(c);
  while (cinfo.output_scanline <= y_last) {
    JSAMPROW line = rows + stride * (cinfo.output_scanline - y_first);
    jpeg_read_scanlines(&cinfo, &line, 1);
  }
  jpeg_destroy_decompress(&cinfo);  // the rows below the window are never decoded
  return "";
}

BilinearTaps slice(const BilinearTaps& t, int64_t first, int64_t count) {
  BilinearTaps out;
  out.i0.assign(t.i0.begin() + first, t.i0.begin() + first + count);
  out.i1.assign(t.i1.begin() + first, t.i1.begin() + first + count);
  out.l1.assign(t.l1.begin() + first, t.l1.begin() + first + count);
  return out;
}

}  // namespace

Result<JpegHeader> read_jpeg_header(std::string_view jpeg, const std::string& where) {
  JpegErrors err{};
  JDIMENSION h = 0, w = 0;
  const char* failure = run_header(reinterpret_cast<const unsigned char*>(jpeg.data()), jpeg.size(), &h, &w, &err);
  if (*failure != '\0') return data_error(fmt::format("{}: not a valid JPEG image ({})", where, failure));
  return JpegHeader{static_cast<int64_t>(h), static_cast<int64_t>(w)};
}

int jpeg_dct_scale(const JpegResample& r, bool fast_jpeg) {
  if (!fast_jpeg) return 8;
  // libjpeg-turbo has SIMD inverse DCTs for 1/8, 2/8 and 4/8 (and 8/8) only;
  // its other scales run in plain C, slower than the full-size decode.
  for (int k : {1, 2, 4}) {
    if (r.box.height * k >= r.grid_h * 8 && r.box.width * k >= r.grid_w * 8) return k;
  }
  return 8;
}

Status decode_jpeg_resampled(std::string_view jpeg, const JpegHeader& header, int64_t c, const JpegResample& r,
                             bool fast_jpeg, uint8_t* out, std::vector<uint8_t>& scratch, const std::string& where) {
  const int k = jpeg_dct_scale(r, fast_jpeg);
  // libjpeg's scaled size: ceil(size * k / 8).
  const int64_t sh = (header.h * k + 7) / 8, sw = (header.w * k + 7) / 8;
  const BilinearTaps ty = slice(bilinear_taps(r.box.top, r.box.height, r.grid_h, k, sh), r.keep.top, r.keep.height);
  const BilinearTaps tx = slice(bilinear_taps(r.box.left, r.box.width, r.grid_w, k, sw), r.keep.left, r.keep.width);
  const int64_t y_first = *std::min_element(ty.i0.begin(), ty.i0.end());
  const int64_t y_last = *std::max_element(ty.i1.begin(), ty.i1.end());
  const int64_t x_lo = *std::min_element(tx.i0.begin(), tx.i0.end());
  const int64_t x_hi = *std::max_element(tx.i1.begin(), tx.i1.end());
  // libjpeg's cropped rows differ from the full rows in the columns next to
  // the crop's edges (chroma upsampling replicates the edge there), so the
  // crop reaches one iMCU (at most 16 pixels) beyond the columns read.
  const int64_t margin = 16;
  const int64_t x_from = std::max<int64_t>(0, x_lo - margin), x_to = std::min(sw - 1, x_hi + margin);
  auto x_first = static_cast<JDIMENSION>(x_from), x_count = static_cast<JDIMENSION>(x_to - x_from + 1);
  scratch.resize(static_cast<size_t>((y_last - y_first + 1) * sw * c));
  JpegErrors err{};
  const char* failure = run_window(reinterpret_cast<const unsigned char*>(jpeg.data()), jpeg.size(),
                                   static_cast<int>(c), k, fast_jpeg, static_cast<JDIMENSION>(sh), static_cast<JDIMENSION>(sw),
                                   static_cast<JDIMENSION>(y_first), static_cast<JDIMENSION>(y_last), &x_first,
                                   &x_count, scratch.data(), &err);
  if (std::string_view(failure) == "size") {
    return data_error(fmt::format("{}: JPEG of {}x{} decoded at {}/8 is not {}x{}", where, header.h, header.w, k, sh, sw));
  }
  if (*failure != '\0') return data_error(fmt::format("{}: not a valid JPEG image ({})", where, failure));
  resample_bilinear_u8(scratch.data(), static_cast<int64_t>(x_count) * c, c, y_first, static_cast<int64_t>(x_first), ty,
                       tx, out, /*rows_first=*/fast_jpeg);
  return {};
}

}  // namespace dtrain
