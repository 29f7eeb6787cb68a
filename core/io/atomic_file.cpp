#include "io/atomic_file.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include <fcntl.h>
#include <unistd.h>

#include "common/errors.h"

namespace tl {
namespace fs = std::filesystem;

namespace {
std::string osReason() { return std::strerror(errno); }

std::string temporarySibling(const std::string& path) {
  std::random_device rd;
  std::ostringstream os;
  os << path << ".tmp-" << ::getpid() << "-" << std::hex << rd();
  return os.str();
}
}  // namespace

void writeFileAtomically(const std::string& path, const std::string& bytes) {
  const std::string tmp = temporarySibling(path);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) throw FileError("cannot write " + path + ": " + osReason());
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t w = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (w < 0) {
      if (errno == EINTR) continue;
      const std::string reason = osReason();
      ::close(fd);
      ::unlink(tmp.c_str());
      throw FileError("cannot write " + path + ": " + reason);
    }
    done += size_t(w);
  }
  // fsync before rename: after a crash the name points either to the old file or to the complete new one.
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    const std::string reason = osReason();
    ::unlink(tmp.c_str());
    throw FileError("cannot write " + path + ": " + reason);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string reason = osReason();
    ::unlink(tmp.c_str());
    throw FileError("cannot write " + path + ": " + reason);
  }
}

std::string readFile(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) throw FileError("cannot read " + path + ": it is a directory");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw FileError("cannot read " + path + ": " + (fs::exists(path, ec) ? osReason() : "no such file"));
  std::ostringstream os;
  os << in.rdbuf();
  if (in.bad()) throw FileError("cannot read " + path + ": read error");
  return os.str();
}

void ensureDirectory(const std::string& path) {
  std::error_code ec;
  fs::create_directories(path, ec);
  if (ec || !fs::is_directory(path)) throw FileError("cannot create directory " + path + ": " + ec.message());
}

}  // namespace tl
