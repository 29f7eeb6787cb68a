#include "io/npy.h"

#include <algorithm>
#include <cstring>
#include <regex>
#include <sstream>

#include "common/errors.h"
#include "io/atomic_file.h"

namespace tl {
namespace {

constexpr char kMagic[] = "\x93NUMPY";

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw FileError(path + ": not a readable .npy file: " + what);
}

struct Header {
  std::string descr;
  bool fortranOrder = false;
  std::vector<int64_t> shape;
};

// The header is a Python dict literal, e.g. {'descr': '<f8', 'fortran_order': False, 'shape': (3, 4), }
Header parseHeader(const std::string& text, const std::string& path) {
  Header h;
  std::smatch m;
  if (!std::regex_search(text, m, std::regex(R"('descr'\s*:\s*'([^']*)')"))) fail(path, "header has no 'descr'");
  h.descr = m[1];
  if (!std::regex_search(text, m, std::regex(R"('fortran_order'\s*:\s*(True|False))")))
    fail(path, "header has no 'fortran_order'");
  h.fortranOrder = m[1] == "True";
  if (!std::regex_search(text, m, std::regex(R"('shape'\s*:\s*\(([^)]*)\))"))) fail(path, "header has no 'shape'");
  std::stringstream ss(m[1].str());
  std::string item;
  while (std::getline(ss, item, ',')) {
    const auto first = item.find_first_not_of(" \t");
    if (first == std::string::npos) continue;
    try {
      const long long v = std::stoll(item.substr(first));
      if (v < 0) fail(path, "negative dimension in shape");
      h.shape.push_back(v);
    } catch (const std::logic_error&) {
      fail(path, "shape '(" + m[1].str() + ")' is not a tuple of integers");
    }
  }
  return h;
}

// Converts little-endian elements of type `descr` to double. Returns false for unsupported types.
bool convert(const std::string& descr, const char* data, size_t count, std::vector<double>& out) {
  auto read = [&](auto tag) {
    using E = decltype(tag);
    out.resize(count);
    for (size_t i = 0; i < count; ++i) {
      E e;
      std::memcpy(&e, data + i * sizeof(E), sizeof(E));
      out[i] = double(e);
    }
    return true;
  };
  // '<' little-endian, '|' not applicable (1-byte), '=' native (little-endian on supported platforms).
  const char order = descr.empty() ? '?' : descr[0];
  if (order != '<' && order != '|' && order != '=') return false;
  const std::string t = descr.substr(1);
  if (t == "f8") return read(double{});
  if (t == "f4") return read(float{});
  if (t == "b1" || t == "u1") return read(uint8_t{});
  if (t == "i1") return read(int8_t{});
  if (t == "i2") return read(int16_t{});
  if (t == "u2") return read(uint16_t{});
  if (t == "i4") return read(int32_t{});
  if (t == "u4") return read(uint32_t{});
  if (t == "i8") return read(int64_t{});
  if (t == "u8") return read(uint64_t{});
  return false;
}

size_t itemSize(const std::string& descr) {
  const std::string t = descr.size() > 1 ? descr.substr(1) : "";
  if (t.size() < 2) return 0;
  try {
    return size_t(std::stoul(t.substr(1)));
  } catch (const std::logic_error&) {
    return 0;
  }
}

bool isFloat(const std::string& descr) { return descr.size() == 3 && (descr.substr(1) == "f4" || descr.substr(1) == "f8"); }

std::string shapeText(const std::vector<int64_t>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

template <class T>
const char* descrOf();
template <>
const char* descrOf<float>() { return "<f4"; }
template <>
const char* descrOf<double>() { return "<f8"; }

}  // namespace

NpyArray readNpy(const std::string& path) {
  const std::string bytes = readFile(path);
  if (bytes.size() < 10 || bytes.compare(0, 6, kMagic, 6) != 0) fail(path, "wrong magic (expected \\x93NUMPY)");
  const int major = static_cast<unsigned char>(bytes[6]);
  size_t headerLen, headerStart;
  if (major == 1) {
    headerLen = static_cast<unsigned char>(bytes[8]) | (size_t(static_cast<unsigned char>(bytes[9])) << 8);
    headerStart = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) fail(path, "file ends inside the header");
    headerLen = 0;
    for (int b = 0; b < 4; ++b) headerLen |= size_t(static_cast<unsigned char>(bytes[8 + b])) << (8 * b);
    headerStart = 12;
  } else {
    fail(path, "unsupported format version " + std::to_string(major));
  }
  if (headerStart + headerLen > bytes.size())
    fail(path, "header length " + std::to_string(headerLen) + " runs beyond the end of the file");
  const Header h = parseHeader(bytes.substr(headerStart, headerLen), path);
  if (h.fortranOrder) fail(path, "Fortran-order arrays are not supported; save with np.ascontiguousarray(a)");

  NpyArray a;
  a.shape = h.shape;
  a.dtype = h.descr;
  const size_t item = itemSize(h.descr);
  const size_t dataStart = headerStart + headerLen;
  const size_t available = bytes.size() - dataStart;
  if (item == 0 || !convert(h.descr, bytes.data() + dataStart, 0, a.values))
    fail(path, "dtype '" + h.descr + "' is not supported (use little-endian float32 or float64)");
  // The element count is bounded by the data actually there before it is multiplied out: a header claiming
  // 2^40 × 2^30 elements would otherwise wrap size_t to 0, pass the size check and size a matrix from the shape.
  const bool empty = std::find(h.shape.begin(), h.shape.end(), 0) != h.shape.end();
  size_t count = 1;
  for (auto d : h.shape) {
    if (!empty && size_t(d) > available / item / count)
      fail(path, "truncated: shape " + shapeText(h.shape) + " needs more data than the file's " +
                     std::to_string(available) + " bytes");
    count *= size_t(d);
  }
  if (available < count * item)
    fail(path, "truncated: shape " + shapeText(h.shape) + " needs " + std::to_string(count * item) +
                   " bytes of data, the file has " + std::to_string(available));
  if (available > count * item)
    fail(path, "has " + std::to_string(available - count * item) + " trailing bytes after the data");
  convert(h.descr, bytes.data() + dataStart, count, a.values);
  return a;
}

template <class T>
Mat<T> readNpyMatrix(const std::string& path) {
  const NpyArray a = readNpy(path);
  if (!isFloat(a.dtype))
    throw FileError(path + ": dtype '" + a.dtype + "' is not supported here; expected float32 or float64");
  if (a.shape.empty() || a.shape.size() > 2)
    throw FileError(path + ": expected a 1-D or 2-D array, got shape " + shapeText(a.shape));
  const Eigen::Index rows = a.shape[0], cols = a.shape.size() == 2 ? a.shape[1] : 1;
  Mat<T> m(rows, cols);
  for (Eigen::Index i = 0; i < rows * cols; ++i) m.data()[i] = T(a.values[size_t(i)]);
  return m;
}

std::vector<MatD> readNpyStack(const std::string& path) {
  const NpyArray a = readNpy(path);
  if (!isFloat(a.dtype))
    throw FileError(path + ": dtype '" + a.dtype + "' is not supported here; expected float32 or float64");
  if (a.shape.size() != 3)
    throw FileError(path + ": expected a 3-D array [N, rows, cols], got shape " + shapeText(a.shape));
  const Eigen::Index rows = a.shape[1], cols = a.shape[2];
  std::vector<MatD> stack(size_t(a.shape[0]), MatD(rows, cols));
  const double* value = a.values.data();
  for (MatD& m : stack)
    for (Eigen::Index i = 0; i < rows * cols; ++i) m.data()[i] = *value++;
  return stack;
}

Mask readNpyMask(const std::string& path) {
  const NpyArray a = readNpy(path);
  const bool column = a.shape.size() == 2 && a.shape[1] == 1;
  if (a.shape.size() != 1 && !column)
    throw FileError(path + ": a mask must be 1-D (one entry per token), got shape " + shapeText(a.shape));
  Mask m(Eigen::Index(a.values.size()));
  for (size_t i = 0; i < a.values.size(); ++i) {
    const double x = a.values[i];
    if (x != 0 && x != 1)
      throw FileError(path + ": mask entries must be 1 (valid) or 0 (padding); entry " + std::to_string(i) + " is " +
                      std::to_string(x));
    m(Eigen::Index(i)) = x != 0;
  }
  return m;
}

template <class T>
std::string encodeNpy(const T* data, const std::vector<int64_t>& shape) {
  std::string dict = std::string("{'descr': '") + descrOf<T>() + "', 'fortran_order': False, 'shape': " +
                     shapeText(shape) + ", }";
  // Version 1.0: total header (magic + version + length + dict + '\n') padded with spaces to 64 bytes.
  size_t total = 10 + dict.size() + 1;
  dict.append((64 - total % 64) % 64, ' ');
  dict += '\n';
  std::string out(kMagic, 6);
  out += char(1);
  out += char(0);
  out += char(dict.size() & 0xff);
  out += char((dict.size() >> 8) & 0xff);
  out += dict;
  size_t count = 1;
  for (auto d : shape) count *= size_t(d);
  out.append(reinterpret_cast<const char*>(data), count * sizeof(T));
  return out;
}

template <class T>
void writeNpy(const std::string& path, const Mat<T>& m) {
  writeFileAtomically(path, encodeNpy(m.data(), {int64_t(m.rows()), int64_t(m.cols())}));
}

template <class T>
void writeNpy(const std::string& path, const Vec<T>& v) {
  writeFileAtomically(path, encodeNpy(v.data(), {int64_t(v.size())}));
}

template Mat<float> readNpyMatrix(const std::string&);
template Mat<double> readNpyMatrix(const std::string&);
template std::string encodeNpy(const float*, const std::vector<int64_t>&);
template std::string encodeNpy(const double*, const std::vector<int64_t>&);
template void writeNpy(const std::string&, const Mat<float>&);
template void writeNpy(const std::string&, const Mat<double>&);
template void writeNpy(const std::string&, const Vec<float>&);
template void writeNpy(const std::string&, const Vec<double>&);

}  // namespace tl
