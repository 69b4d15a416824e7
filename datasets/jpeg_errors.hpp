// libjpeg's error handling for dtrain's decoders: fatal errors longjmp back
// to the frame that called setjmp(errors.jump) (which must hold only plain C
// types across the jump), with libjpeg's message; corrupt-data warnings are
// ignored and decoding goes on (a truncated JPEG decodes with gray rows).
#pragma once

#include <csetjmp>
#include <cstddef>
#include <cstdio>

#include <jpeglib.h>

namespace dtrain {

struct JpegErrors {
  jpeg_error_mgr pub;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

// Sets `errors` up and returns what goes in cinfo.err.
jpeg_error_mgr* use_jpeg_errors(JpegErrors* errors);

}  // namespace dtrain
