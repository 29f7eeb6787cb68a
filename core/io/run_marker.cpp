#include "io/run_marker.h"

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include "common/errors.h"

namespace tl {

RunMarker::RunMarker(std::string path) : path_(std::move(path)) {
  int fd = ::open(path_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  const bool existed = fd < 0 && errno == EEXIST;
  if (existed) fd = ::open(path_.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) throw FileError("cannot create the run marker " + path_ + ": " + std::strerror(errno));
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd);  // a live process holds it
    return;
  }
  fd_ = fd;
  previousRunEndedUncleanly_ = existed;
}

RunMarker::~RunMarker() {
  if (fd_ < 0) return;
  // Unlink while still locked: a process starting now either sees the locked file or none, never a stale one.
  ::unlink(path_.c_str());
  ::close(fd_);
}

}  // namespace tl
