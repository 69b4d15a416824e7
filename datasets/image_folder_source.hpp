// format: image_folder: a directory with one sub-folder of images per class
// (Keras' image_dataset_from_directory). Class ids follow the sorted
// sub-folder names, or data.*.classes' order; JPEG and PNG files (told apart
// by their bytes, not their names) of any size are decoded when a batch is
// gathered and resized bilinearly to image_size, so only the file list is
// held in memory. holdout/split keep a fixed share of each class apart for
// evaluation (chosen by a hash of the file's path, the same for every job
// that names the same folder).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "datasets/source.hpp"

namespace dtrain {

Result<SourcePtr> load_image_folder_source(const DataSourceSpec& spec, const SourceContext& ctx);
// The class names of `spec` (an image_folder source) in id order: its
// classes, or its dir's sorted sub-folders (the folders are listed, not
// their images). kConfig error without dir; kData errors as list_class_names.
Result<std::vector<std::string>> image_folder_class_names(const DataSourceSpec& spec, const SourceContext& ctx);
// [H, W, C] of image_size and color_mode, labels [].
std::optional<ExampleShapes> image_folder_shapes(const DataSourceSpec& spec);

// The image size from a PNG's IHDR chunk; kData error "<where>: not a PNG
// image (...)" otherwise.
struct ImageSize {
  int64_t h = 0, w = 0;
};
Result<ImageSize> read_png_size(std::string_view png, const std::string& where);

// One image file (JPEG or PNG by its bytes) as image_folder reads it:
// out_h x out_w x c floats (c: 1 gray, 3 RGB, 4 RGBA), 0..255 times `scale`,
// resized bilinearly unless already of that size. kData errors name the file.
// `scratch` is reused storage.
Status decode_image_file(const std::string& path, int64_t out_h, int64_t out_w, int64_t c, float scale, float* out,
                         std::vector<float>& scratch);
// Whether `path` names a file image_folder reads (.jpg, .jpeg, .png, any case).
bool is_image_file_name(const std::string& path);
// The channels of a color_mode: grayscale 1, rgb 3, rgba 4.
int64_t color_mode_channels(const std::string& color_mode);

}  // namespace dtrain
