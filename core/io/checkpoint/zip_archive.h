#pragma once
// The zip container PyTorch writes (torch.save since 1.6): entries listed in a central directory at the end
// of the file. Parsed by the project's own code from the whole file, memory-mapped (io/file_bytes.h), so every
// offset and size is checked against the bytes actually there and stored entries are read in place. Stored and deflated entries are read, with ZIP64 records
// (PyTorch always writes them; they carry sizes over 4 GB); encryption and multi-disk archives are refused.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace tl {

class FileBytes;

struct ZipEntry {
  std::string name;
  uint16_t method = 0;  // 0 stored, 8 deflate
  uint32_t crc32 = 0;
  uint64_t compressedSize = 0;
  uint64_t uncompressedSize = 0;
  uint64_t dataOffset = 0;  // first byte of the (compressed) data in the file
};

class ZipArchive {
 public:
  // `bytes` is the whole file; `path` names it in errors. Throws FileError for anything not a readable zip.
  ZipArchive(std::string path, std::string bytes);
  ZipArchive(std::string path, std::shared_ptr<const FileBytes> bytes);
  static ZipArchive open(const std::string& path);  // maps the file
  // contents() hands out views into the archive's own buffers, so it stays where it was made.
  ZipArchive(const ZipArchive&) = delete;
  ZipArchive& operator=(const ZipArchive&) = delete;

  const std::string& path() const { return path_; }
  const std::vector<ZipEntry>& entries() const { return entries_; }
  const ZipEntry* find(const std::string& name) const;  // nullptr when absent

  // The entry's uncompressed bytes after a CRC check; valid as long as the archive. A stored entry is a view
  // into the file itself (torch.save stores its storages uncompressed). Throws FileError.
  std::string_view contents(const ZipEntry& entry);

 private:
  std::string path_;
  std::shared_ptr<const FileBytes> bytes_;
  std::vector<ZipEntry> entries_;
  std::map<std::string, std::string_view> checked_;  // entries already CRC-checked (and inflated)
  std::map<std::string, std::string> inflated_;      // owns the bytes of deflated entries
};

}  // namespace tl
