#pragma once
// The bytes of a whole file, read-only: memory-mapped, so a 346 MB checkpoint costs no copy before its
// tensors are decoded into their final buffers (the page cache is the only other place the bytes live), or
// held in memory when they came from elsewhere (tests, fuzzers, inflated zip entries).
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace tl {

class FileBytes {
 public:
  // Maps `path` (an empty file maps to no bytes). Throws FileError naming the path and the OS reason.
  static std::shared_ptr<const FileBytes> map(const std::string& path);
  static std::shared_ptr<const FileBytes> hold(std::string bytes);

  ~FileBytes();
  FileBytes(const FileBytes&) = delete;
  FileBytes& operator=(const FileBytes&) = delete;

  std::string_view view() const { return {data_, size_}; }
  size_t size() const { return size_; }

 private:
  FileBytes() = default;

  const char* data_ = nullptr;
  size_t size_ = 0;
  void* mapping_ = nullptr;  // set when data_ is an mmap of the file
  std::string held_;         // the bytes when they are not mapped
};

// "[begin, end)": a half-open byte range as the readers' error messages write it.
std::string byteRange(uint64_t begin, uint64_t end);

}  // namespace tl
