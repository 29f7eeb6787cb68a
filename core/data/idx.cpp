#include "data/idx.h"

#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <type_traits>

#include "common/errors.h"

namespace tl {
namespace {

constexpr uint8_t kUnsignedByte = 0x08;
constexpr int kMaxRank = 8;
constexpr size_t kChunk = size_t(1) << 20;

struct GzClose {
  void operator()(gzFile f) const { gzclose(f); }
};
using GzFile = std::unique_ptr<std::remove_pointer_t<gzFile>, GzClose>;

class IdxReader {
 public:
  explicit IdxReader(const std::string& path) : path_(path) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec)) fail("no such file");
    // gzread passes plain (not gzipped) files through unchanged.
    file_.reset(gzopen(path.c_str(), "rb"));
    if (!file_) fail("cannot open it");
  }

  IdxArray read() {
    uint8_t magic[4];
    if (readUpTo(magic, 4) != 4) fail("file is shorter than the 4-byte IDX magic; it is truncated or not IDX");
    if (magic[0] != 0 || magic[1] != 0) fail("bad magic: the file does not start with two zero bytes; it is not IDX");
    if (magic[2] != kUnsignedByte)
      fail("element type " + hex(magic[2]) + " is not supported (only unsigned bytes, 0x08)");
    if (magic[3] == 0 || magic[3] > kMaxRank) fail("dimension count " + std::to_string(magic[3]) + " is not plausible");

    IdxArray a;
    uint64_t count = 1;
    for (int d = 0; d < magic[3]; ++d) {
      uint8_t b[4];
      if (readUpTo(b, 4) != 4) fail("header ends inside dimension " + std::to_string(d) + "; the file is truncated");
      const uint64_t dim = uint64_t(b[0]) << 24 | uint64_t(b[1]) << 16 | uint64_t(b[2]) << 8 | b[3];
      a.shape.push_back(int64_t(dim));
      count *= dim;  // at most 8 factors below 2^32 would overflow, so check as we go
      if (count > (uint64_t(1) << 40)) fail("dimensions " + shapeText(a.shape) + " describe an implausible size");
    }

    // Grow the buffer only as data actually arrive, so a corrupt header cannot demand a huge allocation.
    while (a.values.size() < count) {
      const size_t have = a.values.size();
      const size_t want = size_t(std::min<uint64_t>(kChunk, count - have));
      a.values.resize(have + want);
      const size_t got = readUpTo(a.values.data() + have, want);
      if (got < want) {
        a.values.resize(have + got);
        break;
      }
    }
    if (a.values.size() < count)
      fail("dimensions " + shapeText(a.shape) + " need " + std::to_string(count) + " data bytes but the file has " +
           std::to_string(a.values.size()) + "; it is truncated");
    uint8_t extra;
    if (readUpTo(&extra, 1) != 0)
      fail("data run past the " + std::to_string(count) + " bytes that dimensions " + shapeText(a.shape) +
           " describe; the header or the file is wrong");
    return a;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const { throw FileError(path_ + ": " + what); }

  static std::string hex(uint8_t v) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "0x%02x", v);
    return buf;
  }

  static std::string shapeText(const std::vector<int64_t>& shape) {
    std::string s;
    for (size_t i = 0; i < shape.size(); ++i) s += (i ? "×" : "") + std::to_string(shape[i]);
    return s;
  }

  // Fewer bytes than asked means the end of the data; damaged gzip data is an error, not an end.
  size_t readUpTo(uint8_t* out, size_t n) {
    const int got = gzread(file_.get(), out, unsigned(n));
    int code = Z_OK;
    const char* message = gzerror(file_.get(), &code);
    if (got < 0 || code != Z_OK)
      fail(std::string("gzip data are damaged (") + message + "); the file is truncated or corrupt");
    return size_t(got);
  }

  std::string path_;
  GzFile file_;
};

}  // namespace

IdxArray readIdx(const std::string& path) { return IdxReader(path).read(); }

}  // namespace tl
