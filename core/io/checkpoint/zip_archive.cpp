#include "io/checkpoint/zip_archive.h"

#include <zlib.h>

#include <climits>
#include <cstdio>
#include <set>
#include <utility>

#include "common/errors.h"
#include "io/file_bytes.h"

namespace tl {
namespace {

// Record layouts from PKWARE's APPNOTE.TXT: local header 4.3.7, central header 4.3.12, ZIP64 end record
// 4.3.14, ZIP64 locator 4.3.15, end record 4.3.16, ZIP64 extra field 4.5.3.
constexpr uint32_t kLocalHeaderSignature = 0x04034b50;
constexpr uint32_t kCentralHeaderSignature = 0x02014b50;
constexpr uint32_t kZip64EndSignature = 0x06064b50;
constexpr uint32_t kZip64LocatorSignature = 0x07064b50;
constexpr uint32_t kEndSignature = 0x06054b50;
constexpr size_t kLocalHeaderSize = 30;
constexpr size_t kCentralHeaderSize = 46;
constexpr size_t kZip64EndSize = 56;
constexpr size_t kZip64LocatorSize = 20;
constexpr size_t kEndSize = 22;
constexpr size_t kMaxCommentSize = 0xffff;
constexpr uint16_t kZip64ExtraId = 0x0001;
constexpr uint32_t kInZip64 = 0xffffffff;  // a 32-bit field whose value is in the ZIP64 record instead
// Deflate cannot expand data by more than about 1032:1; a larger claimed size is a corrupt header.
constexpr uint64_t kMaxDeflateRatio = 1032;

std::string hex(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

// Reads the central directory of a whole zip file held in memory; every read is bounds-checked first.
class DirectoryReader {
 public:
  DirectoryReader(const std::string& path, std::string_view bytes) : path_(path), b_(bytes) {}

  std::vector<ZipEntry> read() {
    const size_t end = findEndRecord();
    locateDirectory(end);
    std::vector<ZipEntry> entries;
    std::set<std::string> names;
    size_t at = size_t(directoryOffset_);
    for (uint64_t i = 0; i < entryCount_; ++i) {
      entries.push_back(readEntry(i, at));
      if (!names.insert(entries.back().name).second)
        fail("zip entry '" + entries.back().name + "' appears twice; the file is corrupt");
    }
    return entries;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const { throw FileError(path_ + ": " + what); }

  uint64_t le(size_t at, int n) const {
    uint64_t v = 0;
    for (int i = n; i-- > 0;) v = v << 8 | uint8_t(b_[at + size_t(i)]);
    return v;
  }
  uint16_t u16(size_t at) const { return uint16_t(le(at, 2)); }
  uint32_t u32(size_t at) const { return uint32_t(le(at, 4)); }
  uint64_t u64(size_t at) const { return le(at, 8); }

  // The end record sits at the very end, followed only by a comment of at most 64 KiB.
  size_t findEndRecord() const {
    if (b_.size() < kEndSize) fail("file is too short to be a zip archive; it is truncated or not a zip file");
    const size_t last = b_.size() - kEndSize;
    const size_t lowest = last > kMaxCommentSize ? last - kMaxCommentSize : 0;
    for (size_t at = last + 1; at-- > lowest;)
      if (u32(at) == kEndSignature && at + kEndSize + u16(at + 20) <= b_.size()) return at;
    fail("no zip end-of-central-directory record; the file is truncated or not a zip archive");
  }

  // Directory position and entry count, from the ZIP64 end record when a locator points to one.
  void locateDirectory(size_t end) {
    if (u16(end + 4) != 0 || u16(end + 6) != 0 || u16(end + 8) != u16(end + 10))
      fail("multi-disk (split) zip archives are not supported");
    entryCount_ = u16(end + 10);
    directorySize_ = u32(end + 12);
    directoryOffset_ = u32(end + 16);
    directoryEnd_ = end;
    const bool zip64Values = entryCount_ == 0xffff || directorySize_ == kInZip64 || directoryOffset_ == kInZip64;
    if (end < kZip64LocatorSize || u32(end - kZip64LocatorSize) != kZip64LocatorSignature) {
      if (zip64Values) fail("the end record defers to a ZIP64 record that is missing; the file is corrupt");
    } else {
      readZip64End(end - kZip64LocatorSize);
    }
    if (directoryOffset_ > directoryEnd_ || directorySize_ > directoryEnd_ - directoryOffset_)
      fail("central directory " + byteRange(directoryOffset_, directoryOffset_ + directorySize_) +
           " lies beyond its end record at byte " + std::to_string(directoryEnd_) +
           "; the file is truncated or corrupt");
    // Each entry takes at least a fixed-size header, which bounds a plausible count.
    if (entryCount_ > directorySize_ / kCentralHeaderSize)
      fail("the end record claims " + std::to_string(entryCount_) + " entries in a " + std::to_string(directorySize_) +
           "-byte central directory; the file is corrupt");
  }

  void readZip64End(size_t locator) {
    if (u32(locator + 4) != 0 || u32(locator + 16) > 1) fail("multi-disk (split) zip archives are not supported");
    const uint64_t record = u64(locator + 8);
    if (record > locator || locator - record < kZip64EndSize || u32(size_t(record)) != kZip64EndSignature)
      fail("the ZIP64 end record is missing at byte " + std::to_string(record) + "; the file is corrupt");
    const size_t at = size_t(record);
    if (u32(at + 16) != 0 || u32(at + 20) != 0 || u64(at + 24) != u64(at + 32))
      fail("multi-disk (split) zip archives are not supported");
    entryCount_ = u64(at + 32);
    directorySize_ = u64(at + 40);
    directoryOffset_ = u64(at + 48);
    directoryEnd_ = at;
  }

  ZipEntry readEntry(uint64_t index, size_t& at) const {
    const size_t directoryEnd = size_t(directoryOffset_ + directorySize_);
    const std::string which = "central directory entry " + std::to_string(index) + " at byte " + std::to_string(at);
    if (at + kCentralHeaderSize > directoryEnd || u32(at) != kCentralHeaderSignature)
      fail(which + " is missing or has a bad signature; the file is corrupt");
    const size_t nameLength = u16(at + 28), extraLength = u16(at + 30), commentLength = u16(at + 32);
    if (at + kCentralHeaderSize + nameLength + extraLength + commentLength > directoryEnd)
      fail(which + " runs past the end of the central directory; the file is corrupt");
    ZipEntry e;
    e.name = std::string(b_.substr(at + kCentralHeaderSize, nameLength));
    e.method = u16(at + 10);
    e.crc32 = u32(at + 16);
    e.compressedSize = u32(at + 20);
    e.uncompressedSize = u32(at + 24);
    uint64_t localOffset = u32(at + 42);
    const std::string entry = "zip entry '" + e.name + "'";
    if (u16(at + 8) & 0x1) fail(entry + " is encrypted, which is not supported");
    if (u16(at + 34) != 0 && u16(at + 34) != 0xffff) fail("multi-disk (split) zip archives are not supported");
    readZip64Extra(at + kCentralHeaderSize + nameLength, extraLength, entry, e, localOffset);
    at += kCentralHeaderSize + nameLength + extraLength + commentLength;

    // The data start after the local header, whose name and extra field (PyTorch pads there to align
    // storages to 64 bytes) may differ in length from the central directory's.
    if (localOffset > directoryOffset_ || directoryOffset_ - localOffset < kLocalHeaderSize ||
        u32(size_t(localOffset)) != kLocalHeaderSignature)
      fail(entry + " has no local header at byte " + std::to_string(localOffset) + "; the file is corrupt");
    const size_t local = size_t(localOffset);
    e.dataOffset = localOffset + kLocalHeaderSize + u16(local + 26) + u16(local + 28);
    if (e.dataOffset > directoryOffset_ || e.compressedSize > directoryOffset_ - e.dataOffset)
      fail(entry + " data " + byteRange(e.dataOffset, e.dataOffset + e.compressedSize) +
           " run into the central directory at byte " + std::to_string(directoryOffset_) +
           "; the file is truncated or corrupt");
    return e;
  }

  // Sizes and offsets over 4 GB: the 32-bit field holds 0xffffffff and the value follows in the ZIP64
  // extra field, in the order uncompressed size, compressed size, local header offset.
  void readZip64Extra(size_t at, size_t length, const std::string& entry, ZipEntry& e, uint64_t& localOffset) const {
    uint64_t* fields[] = {&e.uncompressedSize, &e.compressedSize, &localOffset};
    bool needed = false;
    for (uint64_t* f : fields) needed |= *f == kInZip64;
    if (!needed) return;
    const size_t end = at + length;
    while (at + 4 <= end) {
      const uint16_t id = u16(at), size = u16(at + 2);
      if (at + 4 + size > end) break;
      if (id == kZip64ExtraId) {
        size_t field = at + 4;
        for (uint64_t* f : fields) {
          if (*f != kInZip64) continue;
          if (field + 8 > at + 4 + size)
            fail(entry + " has a ZIP64 extra field too short for its sizes; the file is corrupt");
          *f = u64(field);
          field += 8;
        }
        return;
      }
      at += 4 + size;
    }
    fail(entry + " defers its sizes to a ZIP64 extra field that is missing; the file is corrupt");
  }

  const std::string& path_;
  std::string_view b_;
  uint64_t entryCount_ = 0, directorySize_ = 0, directoryOffset_ = 0;
  size_t directoryEnd_ = 0;  // where the central directory must end: the (ZIP64) end record
};

}  // namespace

ZipArchive::ZipArchive(std::string path, std::string bytes)
    : ZipArchive(std::move(path), FileBytes::hold(std::move(bytes))) {}

ZipArchive::ZipArchive(std::string path, std::shared_ptr<const FileBytes> bytes)
    : path_(std::move(path)), bytes_(std::move(bytes)) {
  entries_ = DirectoryReader(path_, bytes_->view()).read();
}

ZipArchive ZipArchive::open(const std::string& path) { return ZipArchive(path, FileBytes::map(path)); }

const ZipEntry* ZipArchive::find(const std::string& name) const {
  for (const auto& e : entries_)
    if (e.name == name) return &e;
  return nullptr;
}

std::string_view ZipArchive::contents(const ZipEntry& entry) {
  if (const auto done = checked_.find(entry.name); done != checked_.end()) return done->second;
  const std::string_view raw = bytes_->view().substr(size_t(entry.dataOffset), size_t(entry.compressedSize));
  const std::string what = path_ + ": zip entry '" + entry.name + "'";
  std::string_view data;
  if (entry.method == 0) {
    if (entry.compressedSize != entry.uncompressedSize)
      throw FileError(what + " is stored uncompressed but its two sizes differ; the file is corrupt");
    data = raw;
  } else if (entry.method == 8) {
    if (entry.uncompressedSize > entry.compressedSize * kMaxDeflateRatio + 64)
      throw FileError(what + " claims " + std::to_string(entry.uncompressedSize) + " bytes from " +
                      std::to_string(entry.compressedSize) + " compressed; the file is corrupt");
    if (entry.uncompressedSize > UINT_MAX || entry.compressedSize > UINT_MAX)
      throw FileError(what + " is a deflated entry over 4 GB, which is not supported");
    std::string out(size_t(entry.uncompressedSize), '\0');
    z_stream z{};
    if (inflateInit2(&z, -MAX_WBITS) != Z_OK) throw FileError(what + ": zlib could not start inflating");
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(raw.data()));
    z.avail_in = uInt(raw.size());
    z.next_out = reinterpret_cast<Bytef*>(out.data());
    z.avail_out = uInt(out.size());
    const int rc = inflate(&z, Z_FINISH);
    const bool complete = rc == Z_STREAM_END && z.total_out == out.size();
    inflateEnd(&z);
    if (!complete)
      throw FileError(what + " does not inflate to its stated " + std::to_string(out.size()) +
                      " bytes; the file is corrupt");
    data = inflated_[entry.name] = std::move(out);
  } else {
    throw FileError(what + " uses compression method " + std::to_string(entry.method) +
                    ", which is not supported (only stored and deflate)");
  }
  const uint32_t actual = uint32_t(crc32_z(0, reinterpret_cast<const Bytef*>(data.data()), data.size()));
  if (actual != entry.crc32)
    throw FileError(what + " fails its CRC check (stored " + hex(entry.crc32) + ", computed " + hex(actual) +
                    "); the file is corrupt");
  return checked_[entry.name] = data;
}

}  // namespace tl
