#pragma once
// Builds small zip archives byte by byte for the reader's tests (APPNOTE.TXT layout: local headers and data,
// central directory, end record), stored or raw-deflated, with hooks to corrupt them afterwards.
#include <zlib.h>

#include <cstdint>
#include <string>
#include <vector>

namespace tl::test {

struct ZipInput {
  std::string name;
  std::string data;
  bool deflate = false;
};

inline void putLe(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out += char((v >> (8 * i)) & 0xff);
}

inline std::string rawDeflate(const std::string& data) {
  z_stream z{};
  deflateInit2(&z, 9, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&z, uLong(data.size())), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = uInt(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = uInt(out.size());
  deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

// Offsets of each entry's local header and of the central directory and end record, for corrupting them.
struct ZipLayout {
  std::vector<size_t> localHeaders;
  std::vector<size_t> centralHeaders;
  size_t endRecord = 0;
};

struct ZipOptions {
  std::string comment;
  // Like PyTorch's writer: a ZIP64 end record and locator; here also every central size and offset moved
  // into a ZIP64 extra field, as for entries over 4 GB.
  bool zip64 = false;
};

inline std::string makeZip(const std::vector<ZipInput>& inputs, ZipLayout* layout = nullptr,
                           const ZipOptions& options = {}) {
  std::string out, central;
  ZipLayout l;
  for (const auto& in : inputs) {
    const std::string body = in.deflate ? rawDeflate(in.data) : in.data;
    const uint32_t crc = uint32_t(crc32(0, reinterpret_cast<const Bytef*>(in.data.data()), uInt(in.data.size())));
    const size_t local = out.size();
    l.localHeaders.push_back(local);
    std::string zip64Extra;
    if (options.zip64) {
      putLe(zip64Extra, 0x0001, 2);
      putLe(zip64Extra, 24, 2);
      putLe(zip64Extra, in.data.size(), 8);
      putLe(zip64Extra, body.size(), 8);
      putLe(zip64Extra, local, 8);
    }
    auto common = [&](std::string& s, bool central) {
      const bool deferred = central && options.zip64;
      putLe(s, 20, 2);                  // version needed
      putLe(s, 0, 2);                   // flags
      putLe(s, in.deflate ? 8 : 0, 2);  // method
      putLe(s, 0, 4);                   // time, date
      putLe(s, crc, 4);
      putLe(s, deferred ? 0xffffffff : body.size(), 4);
      putLe(s, deferred ? 0xffffffff : in.data.size(), 4);
      putLe(s, in.name.size(), 2);
      putLe(s, deferred ? zip64Extra.size() : 0, 2);
    };
    putLe(out, 0x04034b50, 4);
    common(out, false);
    out += in.name + body;
    l.centralHeaders.push_back(central.size());
    putLe(central, 0x02014b50, 4);
    putLe(central, 20, 2);  // version made by
    common(central, true);
    putLe(central, 0, 2);  // comment length
    putLe(central, 0, 4);  // disk, internal attributes
    putLe(central, 0, 4);  // external attributes
    putLe(central, options.zip64 ? 0xffffffff : local, 4);
    central += in.name + (options.zip64 ? zip64Extra : "");
  }
  const size_t directory = out.size();
  for (auto& c : l.centralHeaders) c += directory;
  out += central;
  if (options.zip64) {
    const size_t record = out.size();
    putLe(out, 0x06064b50, 4);
    putLe(out, 44, 8);  // size of the rest of the record
    putLe(out, 45, 2);
    putLe(out, 45, 2);
    putLe(out, 0, 8);  // disk numbers
    putLe(out, inputs.size(), 8);
    putLe(out, inputs.size(), 8);
    putLe(out, central.size(), 8);
    putLe(out, directory, 8);
    putLe(out, 0x07064b50, 4);  // locator
    putLe(out, 0, 4);
    putLe(out, record, 8);
    putLe(out, 1, 4);
  }
  l.endRecord = out.size();
  putLe(out, 0x06054b50, 4);
  putLe(out, 0, 4);  // disk numbers
  putLe(out, options.zip64 ? 0xffff : inputs.size(), 2);
  putLe(out, options.zip64 ? 0xffff : inputs.size(), 2);
  putLe(out, options.zip64 ? 0xffffffff : central.size(), 4);
  putLe(out, options.zip64 ? 0xffffffff : directory, 4);
  putLe(out, options.comment.size(), 2);
  out += options.comment;
  if (layout) *layout = l;
  return out;
}

}  // namespace tl::test
