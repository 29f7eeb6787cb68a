#pragma once
// Writes pickle opcodes by hand for the reader's tests, in the shapes torch.save emits (protocol 2), so each
// test states exactly which bytes the reader sees.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace tl::test {

class Pickle {
 public:
  Pickle& proto(int version = 2) { return op(0x80).byte(version); }
  Pickle& op(uint8_t code) {
    bytes_ += char(code);
    return *this;
  }
  Pickle& byte(int v) {
    bytes_ += char(uint8_t(v));
    return *this;
  }
  Pickle& le(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) bytes_ += char((v >> (8 * i)) & 0xff);
    return *this;
  }
  Pickle& mark() { return op('('); }
  Pickle& str(const std::string& s) {
    op('X').le(s.size(), 4);
    bytes_ += s;
    return *this;
  }
  Pickle& integer(int64_t v) {
    if (v >= 0 && v < 256) return op('K').byte(int(v));
    if (v >= INT32_MIN && v <= INT32_MAX) return op('J').le(uint64_t(uint32_t(int32_t(v))), 4);
    return op(0x8a).byte(8).le(uint64_t(v), 8);
  }
  Pickle& real(double v) {
    uint64_t u;
    std::memcpy(&u, &v, 8);
    op('G');
    for (int i = 7; i >= 0; --i) bytes_ += char((u >> (8 * i)) & 0xff);
    return *this;
  }
  Pickle& global(const std::string& module, const std::string& name) {
    op('c');
    bytes_ += module + "\n" + name + "\n";
    return *this;
  }
  Pickle& tuple(const std::vector<int64_t>& v) {
    mark();
    for (int64_t x : v) integer(x);
    return op('t');
  }
  Pickle& orderedDict() { return global("collections", "OrderedDict").op(')').op('R'); }
  // _rebuild_tensor_v2((persistent storage), offset, size, stride, False, OrderedDict())
  Pickle& tensor(const std::string& storageType, const std::string& key, int64_t numel, int64_t offset,
                 const std::vector<int64_t>& size, const std::vector<int64_t>& stride) {
    global("torch._utils", "_rebuild_tensor_v2").mark();
    mark().str("storage").global("torch", storageType).str(key).str("cpu").integer(numel).op('t').op('Q');
    integer(offset).tuple(size).tuple(stride).op(0x89).orderedDict().op('t');
    return op('R');
  }
  Pickle& raw(const std::string& s) {
    bytes_ += s;
    return *this;
  }
  Pickle& stop() { return op('.'); }
  const std::string& bytes() const { return bytes_; }

 private:
  std::string bytes_;
};

}  // namespace tl::test
