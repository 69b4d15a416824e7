// encode_png: libpng's png_image_write_to_memory, sized by a first call.
#include "engine/io/png_write.hpp"

#include <png.h>

#include <cassert>
#include <cstring>

#include <fmt/format.h>

namespace dtrain {

Result<std::string> encode_png(const Image8& image) {
  assert(image.channels == 1 || image.channels == 3 || image.channels == 4);
  assert(image.pixels.size() == static_cast<size_t>(image.height) * static_cast<size_t>(image.width) *
                                    static_cast<size_t>(image.channels));
  png_image png;
  std::memset(&png, 0, sizeof(png));
  png.version = PNG_IMAGE_VERSION;
  png.width = static_cast<png_uint_32>(image.width);
  png.height = static_cast<png_uint_32>(image.height);
  png.format = image.channels == 1 ? PNG_FORMAT_GRAY : image.channels == 3 ? PNG_FORMAT_RGB : PNG_FORMAT_RGBA;
  const png_int_32 stride = image.width * image.channels;
  png_alloc_size_t size = 0;
  // The first call measures, the second writes.
  if (png_image_write_to_memory(&png, nullptr, &size, 0, image.pixels.data(), stride, nullptr) == 0) {
    return runtime_error(fmt::format("cannot encode a {}x{} PNG: {}", image.width, image.height, png.message));
  }
  std::string out(size, '\0');
  if (png_image_write_to_memory(&png, out.data(), &size, 0, image.pixels.data(), stride, nullptr) == 0) {
    return runtime_error(fmt::format("cannot encode a {}x{} PNG: {}", image.width, image.height, png.message));
  }
  out.resize(size);
  return out;
}

}  // namespace dtrain
