// MappedText (datasets/mapped_text.hpp).
#include "datasets/mapped_text.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <utility>

#include "datasets/idx_file.hpp"

namespace dtrain {

Result<MappedText> MappedText::open(const std::string& path) {
  MappedText m;
  if (path.size() < 3 || path.compare(path.size() - 3, 3, ".gz") != 0) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    struct stat st {};
    if (fd >= 0 && ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
      m.size_ = static_cast<size_t>(st.st_size);
      void* p = m.size_ == 0 ? nullptr : ::mmap(nullptr, m.size_, PROT_READ, MAP_PRIVATE, fd, 0);
      ::close(fd);
      if (p != MAP_FAILED) {
        m.map_ = static_cast<char*>(p);
        if (m.map_ != nullptr) ::madvise(m.map_, m.size_, MADV_SEQUENTIAL);
        return m;
      }
      m.size_ = 0;
    } else if (fd >= 0) {
      ::close(fd);
    }
  }
  auto bytes = read_data_file(path);  // .gz, or what cannot be mapped: its errors name the file
  if (!bytes) return bytes.error();
  m.whole_ = std::move(*bytes);
  return m;
}

MappedText& MappedText::operator=(MappedText&& o) noexcept {
  std::swap(map_, o.map_);
  std::swap(size_, o.size_);
  std::swap(released_, o.released_);
  std::swap(whole_, o.whole_);
  return *this;
}

MappedText::~MappedText() {
  if (map_ != nullptr) ::munmap(map_, size_);
}

std::string_view MappedText::text() const {
  return map_ != nullptr ? std::string_view(map_, size_)
                         : std::string_view(reinterpret_cast<const char*>(whole_.data()), whole_.size());
}

void MappedText::release_before(std::string_view text, size_t pos) {
  if (map_ == nullptr) return;
  constexpr size_t kStep = size_t{16} << 20;
  const size_t end = static_cast<size_t>(text.data() - map_) + pos;
  if (end < released_ + 2 * kStep) return;
  const size_t upto = (end - kStep) / kStep * kStep;  // page aligned, a step behind the reader
  ::madvise(map_ + released_, upto - released_, MADV_DONTNEED);
  released_ = upto;
}

}  // namespace dtrain
