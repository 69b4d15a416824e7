// libjpeg error callbacks (see jpeg_errors.hpp).
#include "datasets/jpeg_errors.hpp"

namespace dtrain {
namespace {

extern "C" void on_jpeg_error(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<JpegErrors*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, err->message);
  std::longjmp(err->jump, 1);
}

extern "C" void on_jpeg_warning(j_common_ptr /*cinfo*/, int /*level*/) {}  // corrupt-data warnings: keep going

}  // namespace

jpeg_error_mgr* use_jpeg_errors(JpegErrors* errors) {
  jpeg_error_mgr* pub = jpeg_std_error(&errors->pub);
  pub->error_exit = on_jpeg_error;
  pub->emit_message = on_jpeg_warning;
  return pub;
}

}  // namespace dtrain
