#include "io/file_bytes.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/errors.h"
#include "io/atomic_file.h"

namespace tl {
namespace {

// Worded as readFile (io/atomic_file.h) words them, so a reader's errors do not depend on how it reads.
[[noreturn]] void failWithErrno(const std::string& path) {
  throw FileError("cannot read " + path + ": " + (errno == ENOENT ? "no such file" : std::strerror(errno)));
}

// Closes the descriptor whatever happens: the mapping stays valid without it.
struct Descriptor {
  int fd;
  ~Descriptor() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

std::shared_ptr<const FileBytes> FileBytes::map(const std::string& path) {
  const Descriptor file{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (file.fd < 0) failWithErrno(path);
  struct stat info {};
  if (::fstat(file.fd, &info) != 0) failWithErrno(path);
  if (S_ISDIR(info.st_mode)) throw FileError("cannot read " + path + ": it is a directory");
  if (!S_ISREG(info.st_mode)) return hold(readFile(path));  // a pipe or device cannot be mapped
  std::shared_ptr<FileBytes> bytes(new FileBytes());
  bytes->size_ = size_t(info.st_size);
  if (bytes->size_ == 0) return bytes;  // mmap refuses a zero length
  void* mapping = ::mmap(nullptr, bytes->size_, PROT_READ, MAP_PRIVATE, file.fd, 0);
  if (mapping == MAP_FAILED) failWithErrno(path);
  // Checkpoints are read front to back, tensor after tensor: let the kernel read ahead generously.
  ::madvise(mapping, bytes->size_, MADV_SEQUENTIAL);
  bytes->mapping_ = mapping;
  bytes->data_ = static_cast<const char*>(mapping);
  return bytes;
}

std::shared_ptr<const FileBytes> FileBytes::hold(std::string held) {
  std::shared_ptr<FileBytes> bytes(new FileBytes());
  bytes->held_ = std::move(held);
  bytes->data_ = bytes->held_.data();
  bytes->size_ = bytes->held_.size();
  return bytes;
}

FileBytes::~FileBytes() {
  if (mapping_) ::munmap(mapping_, size_);
}

std::string byteRange(uint64_t begin, uint64_t end) {
  return "[" + std::to_string(begin) + ", " + std::to_string(end) + ")";
}

}  // namespace tl
