// A csv file's bytes for one front-to-back read (datasets/csv_source.cpp): a
// plain file mapped read-only, its pages released as the reader passes them,
// so that the file is never held whole; a .gz file decompressed into memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/base/status.hpp"

namespace dtrain {

class MappedText {
 public:
  // kData errors (read_data_file's) name the file.
  static Result<MappedText> open(const std::string& path);
  MappedText() = default;
  MappedText(MappedText&& o) noexcept { *this = std::move(o); }
  MappedText& operator=(MappedText&& o) noexcept;
  ~MappedText();

  std::string_view text() const;
  // The pages of a mapping before byte `pos` of `text` (a view of text()
  // that may start later, after a BOM) are given back, every 16 MiB.
  void release_before(std::string_view text, size_t pos);

 private:
  char* map_ = nullptr;
  size_t size_ = 0, released_ = 0;
  std::vector<uint8_t> whole_;
};

}  // namespace dtrain
