// format: image_folder (datasets/image_folder_source.hpp).
#include "datasets/image_folder_source.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "datasets/class_folders.hpp"
#include "datasets/example_jpeg.hpp"
#include "datasets/example_png.hpp"
#include "datasets/idx_file.hpp"
#include "datasets/jpeg_window.hpp"
#include "datasets/resized_crop.hpp"

namespace dtrain {

namespace fs = std::filesystem;

namespace {

constexpr unsigned char kPngMagic[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};

bool is_png(std::string_view b) { return b.size() >= 8 && std::memcmp(b.data(), kPngMagic, 8) == 0; }
bool is_jpeg(std::string_view b) {
  return b.size() >= 3 && static_cast<unsigned char>(b[0]) == 0xff && static_cast<unsigned char>(b[1]) == 0xd8 &&
         static_cast<unsigned char>(b[2]) == 0xff;
}

struct ImageFile {
  std::string path;
  float label = 0;
};

}  // namespace

int64_t color_mode_channels(const std::string& color_mode) {
  if (color_mode == "grayscale") return 1;
  if (color_mode == "rgba") return 4;
  return 3;
}

// .jpg, .jpeg and .png, any case (other files are left alone, as Keras does).
bool is_image_file_name(const std::string& path) {
  std::string ext = fs::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return ext == ".jpg" || ext == ".jpeg" || ext == ".png";
}

// Decodes one image file to h x w x c floats 0..255 (its own size), then
// resizes it to the output size.
Status decode_image_file(const std::string& path, int64_t out_h, int64_t out_w, int64_t c, float scale, float* out,
                         std::vector<float>& scratch) {
  auto bytes = read_data_file(path);
  if (!bytes) return bytes.error();
  const std::string_view b(reinterpret_cast<const char*>(bytes->data()), bytes->size());
  int64_t h = 0, w = 0;
  if (is_png(b)) {
    auto size = read_png_size(b, path);
    if (!size) return size.error();
    h = size->h;
    w = size->w;
  } else if (is_jpeg(b)) {
    auto header = read_jpeg_header(b, path);
    if (!header) return header.error();
    h = header->h;
    w = header->w;
  } else {
    return data_error(fmt::format("{}: not a JPEG or PNG image (it starts with {}); image_folder reads JPEG and PNG "
                                  "files (set on_error: skip to leave such files out)",
                                  path, b.empty() ? std::string("nothing: the file is empty")
                                                  : fmt::format("0x{:02x}", static_cast<unsigned char>(b[0]))));
  }
  const bool resize = h != out_h || w != out_w;
  // JPEG decodes to gray or RGB; an rgba image from a JPEG is opaque.
  const int64_t decode_c = is_jpeg(b) && c == 4 ? 3 : c;
  scratch.resize(static_cast<size_t>(h * w * decode_c));
  float* pixels = resize || decode_c != c ? scratch.data() : out;
  Status s = is_png(b) ? decode_png(b, h, w, decode_c, pixels, path) : decode_jpeg(b, h, w, decode_c, pixels, path);
  if (!s) return s;
  if (decode_c != c) {  // RGB -> RGBA, alpha 255, in place from the end
    std::vector<float> rgba(static_cast<size_t>(h * w * 4));
    for (int64_t i = 0; i < h * w; ++i) {
      for (int k = 0; k < 3; ++k) rgba[static_cast<size_t>(i * 4 + k)] = pixels[i * 3 + k];
      rgba[static_cast<size_t>(i * 4 + 3)] = 255.0f;
    }
    scratch.swap(rgba);
    pixels = scratch.data();
    if (!resize) std::copy(scratch.begin(), scratch.end(), out);
  }
  if (resize) resize_bilinear_u8(pixels, ImageDims{h, w, c}, CropBox{0, 0, h, w}, out_h, out_w, out);
  if (scale != 1.0f) {
    for (int64_t i = 0; i < out_h * out_w * c; ++i) out[i] *= scale;
  }
  return {};
}

namespace {

class ImageFolderSource final : public ExampleSource {
 public:
  ImageFolderSource(std::vector<ImageFile> files, int64_t h, int64_t w, int64_t c, std::string name,
                    std::string summary, std::vector<std::string> classes)
      : files_(std::move(files)),
        h_(h),
        w_(w),
        c_(c),
        name_(std::move(name)),
        summary_(std::move(summary)),
        classes_(std::move(classes)) {}

  int64_t size() const override { return static_cast<int64_t>(files_.size()); }
  Shape feature_shape() const override { return {h_, w_, c_}; }
  Shape label_shape() const override { return {}; }
  std::string describe() const override { return name_; }
  std::string summary() const override { return summary_; }
  std::vector<std::string> class_names() const override { return classes_; }

  // Decode errors throw ErrorException: the pipeline reports them as the
  // batch's error, naming the file.
  Batch gather(const std::vector<int64_t>& indices, float scale) const override {
    const auto b = static_cast<int64_t>(indices.size());
    Batch out{Tensor(Shape{b, h_, w_, c_}), Tensor(Shape{b}), indices};
    const int64_t row = h_ * w_ * c_;
    std::vector<float> scratch;
    for (int64_t r = 0; r < b; ++r) {
      const ImageFile& f = files_[static_cast<size_t>(indices[static_cast<size_t>(r)])];
      if (Status s = decode_image_file(f.path, h_, w_, c_, scale, out.features.data() + r * row, scratch); !s) {
        throw ErrorException{s.error()};
      }
      out.labels.data()[r] = f.label;
    }
    return out;
  }

 private:
  std::vector<ImageFile> files_;
  int64_t h_, w_, c_;
  std::string name_, summary_;
  std::vector<std::string> classes_;  // the class folders, in id order
};

// What image_folder's messages call its files.
const ClassFolderKind kImageFolders{&is_image_file_name, "images", "cat/*.jpg and {dir}/dog/*.png"};

}  // namespace

Result<ImageSize> read_png_size(std::string_view png, const std::string& where) {
  // Signature, then the IHDR chunk: length (4), "IHDR", width and height (4 each, big-endian).
  if (!is_png(png) || png.size() < 24 || png.substr(12, 4) != "IHDR") {
    return data_error(where + ": not a PNG image (no PNG signature and IHDR chunk)");
  }
  auto be32 = [&](size_t at) {
    int64_t v = 0;
    for (size_t k = 0; k < 4; ++k) v = v << 8 | static_cast<unsigned char>(png[at + k]);
    return v;
  };
  const ImageSize size{be32(20), be32(16)};
  if (size.h <= 0 || size.w <= 0 || size.h > (1 << 24) || size.w > (1 << 24)) {
    return data_error(fmt::format("{}: PNG header gives an impossible size {}x{}", where, size.h, size.w));
  }
  return size;
}

Result<std::vector<std::string>> image_folder_class_names(const DataSourceSpec& spec, const SourceContext& ctx) {
  if (spec.dir.empty()) return config_error(ctx.prefix + "format image_folder needs dir (a folder of class folders)");
  auto named = list_class_names(spec, ctx, kImageFolders);
  if (!named) return named.error();
  return std::move(named->classes);
}

std::optional<ExampleShapes> image_folder_shapes(const DataSourceSpec& spec) {
  if (spec.image_size.size() != 2) return std::nullopt;
  return ExampleShapes{{spec.image_size[0], spec.image_size[1], color_mode_channels(spec.color_mode)}, {}};
}

Result<SourcePtr> load_image_folder_source(const DataSourceSpec& spec, const SourceContext& ctx) {
  if (spec.dir.empty()) return config_error(ctx.prefix + "format image_folder needs dir (a folder of class folders)");
  if (spec.image_size.size() != 2 || spec.image_size[0] < 1 || spec.image_size[1] < 1) {
    return config_error(ctx.prefix + "image_size must be [height, width], both >= 1");
  }
  if (spec.split == "holdout" && spec.holdout <= 0.0) {
    return config_error(ctx.prefix + "split: holdout reads the held-out images, but holdout is 0; set holdout (e.g. 0.2)");
  }
  auto listed = list_class_folders(spec, ctx, spec.split, kImageFolders);
  if (!listed) return listed.error();
  const std::string& dir = listed->dir;
  std::vector<std::string> classes = listed->classes;
  std::vector<ImageFile> files;
  std::vector<int64_t> per_class;
  int64_t skipped = 0;
  std::string first_skipped;
  const int64_t c = color_mode_channels(spec.color_mode);
  for (size_t k = 0; k < classes.size(); ++k) {
    const std::vector<std::string>& kept = listed->files[k];
    int64_t count = 0;
    for (const std::string& path : kept) {
      if (spec.on_error == "skip") {  // a header that is neither JPEG nor PNG: left out and counted
        auto bytes = read_data_file(path);
        const std::string_view b = bytes ? std::string_view(reinterpret_cast<const char*>(bytes->data()),
                                                            bytes->size())
                                         : std::string_view();
        const bool ok = bytes && ((is_png(b) && read_png_size(b, path).ok()) ||
                                  (is_jpeg(b) && read_jpeg_header(b, path).ok()));
        if (!ok) {
          if (skipped++ == 0) first_skipped = path;
          continue;
        }
      }
      files.push_back({path, static_cast<float>(k)});
      ++count;
    }
    per_class.push_back(count);
  }
  if (files.empty()) {
    return data_error(fmt::format("{}dir {}: no .jpg, .jpeg or .png files in the class folders ({}){}", ctx.prefix,
                                  dir, fmt::join(classes, ", "),
                                  spec.split == "holdout" ? " for the held-out split" : ""));
  }
  std::string counts;
  for (size_t k = 0; k < classes.size(); ++k) {
    counts += fmt::format("{}{} {} ({})", k == 0 ? "" : ", ", k, classes[k], per_class[k]);
  }
  std::string summary = fmt::format("image_folder {}: {} images{} in {} classes: {}; decoded to {}x{}x{}", dir,
                                    files.size(), spec.holdout > 0 ? fmt::format(" ({} split)", spec.split) : "",
                                    classes.size(), counts, spec.image_size[0], spec.image_size[1], c);
  if (skipped > 0) summary += fmt::format("; skipped {} file(s) that are not JPEG or PNG (first: {})", skipped, first_skipped);
  return SourcePtr(std::make_shared<ImageFolderSource>(std::move(files), spec.image_size[0], spec.image_size[1], c,
                                                       dir, std::move(summary), std::move(classes)));
}

}  // namespace dtrain
