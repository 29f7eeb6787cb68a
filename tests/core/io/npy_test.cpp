// NumPy .npy reading and writing. Corrupt and unsupported files are built here byte by byte.
#include "io/npy.h"

#include <gtest/gtest.h>

#include <cstring>

#include "common/errors.h"
#include "support/test_util.h"

namespace tl {
namespace {

using test::throwsWith;

// A .npy file: magic, version, header length (uint16 for 1.0, uint32 for 2.0/3.0, little endian), the
// header dict padded with spaces and terminated by '\n' so the data start on a 64-byte boundary.
std::string npyFile(const std::string& dict, const std::string& data, int major = 1) {
  const size_t lenBytes = major == 1 ? 2 : 4;
  const size_t prefix = 6 + 2 + lenBytes;
  std::string header = dict;
  while ((prefix + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out = "\x93NUMPY";
  out += char(major);
  out += char(0);
  const uint32_t len = uint32_t(header.size());
  for (size_t i = 0; i < lenBytes; ++i) out += char((len >> (8 * i)) & 0xff);
  return out + header + data;
}

template <class T>
std::string raw(const std::vector<T>& values) {
  std::string s(values.size() * sizeof(T), '\0');
  std::memcpy(s.data(), values.data(), s.size());
  return s;
}

std::string dict(const std::string& descr, const std::string& shape, bool fortran = false) {
  return "{'descr': '" + descr + "', 'fortran_order': " + (fortran ? "True" : "False") + ", 'shape': " + shape +
         ", }";
}

const std::vector<double> k23 = {1.5, -2.0, 3.25, 0.0, 1e-300, -7e200};

MatD expected23() {
  MatD m(2, 3);
  m << 1.5, -2.0, 3.25, 0.0, 1e-300, -7e200;
  return m;
}

class Npy : public ::testing::Test {
 protected:
  std::string put(const std::string& name, const std::string& bytes) {
    const std::string path = dir.file(name);
    test::writeBytes(path, bytes);
    return path;
  }
  test::TempDir dir;
};

TEST_F(Npy, ReadsHandMadeFloat64) {
  const auto path = put("a.npy", npyFile(dict("<f8", "(2, 3)"), raw(k23)));
  const NpyArray a = readNpy(path);
  EXPECT_EQ(a.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(a.dtype, "<f8");
  EXPECT_EQ(a.values, k23);
  EXPECT_TRUE(test::matricesIdentical(readNpyMatrix<double>(path), expected23()));
}

TEST_F(Npy, ReadsFloat32AndVersions2And3AndAnyKeyOrder) {
  const std::vector<float> f = {0.1f, -3.5f, 1e30f, 7.0f};
  const auto p1 = put("f.npy", npyFile(dict("<f4", "(2, 2)"), raw(f)));
  const Mat<float> m = readNpyMatrix<float>(p1);
  ASSERT_EQ(m.rows(), 2);
  ASSERT_EQ(m.cols(), 2);
  EXPECT_EQ(m(0, 0), 0.1f);
  EXPECT_EQ(m(1, 0), 1e30f);
  EXPECT_EQ(readNpyMatrix<double>(p1)(0, 0), double(0.1f));
  for (int major : {2, 3}) {
    const auto p = put("v" + std::to_string(major) + ".npy", npyFile(dict("<f8", "(2, 3)"), raw(k23), major));
    EXPECT_TRUE(test::matricesIdentical(readNpyMatrix<double>(p), expected23())) << "version " << major;
  }
  const auto shuffled =
      put("s.npy", npyFile("{'shape': (2,3), 'fortran_order': False, 'descr': '<f8'}", raw(k23)));
  EXPECT_TRUE(test::matricesIdentical(readNpyMatrix<double>(shuffled), expected23()));
}

TEST_F(Npy, OneDimensionalReadsAsColumn) {
  const std::vector<double> v = {1, 2, 3, 4, 5};
  const auto path = put("v.npy", npyFile(dict("<f8", "(5,)"), raw(v)));
  const MatD m = readNpyMatrix<double>(path);
  ASSERT_EQ(m.rows(), 5);
  ASSERT_EQ(m.cols(), 1);
  EXPECT_EQ(m(4, 0), 5.0);
}

TEST_F(Npy, FortranOrderIsRejectedClearly) {
  const auto path = put("fortran.npy", npyFile(dict("<f8", "(2, 3)", true), raw(k23)));
  EXPECT_TRUE(throwsWith<FileError>([&] { (void)readNpy(path); }, {"fortran.npy", "fortran"}));
  EXPECT_TRUE(throwsWith<FileError>([&] { (void)readNpyMatrix<double>(path); }, {"fortran.npy"}));
}

TEST_F(Npy, WrongMagicIsRejected) {
  std::string bytes = npyFile(dict("<f8", "(2, 3)"), raw(k23));
  bytes[1] = 'X';
  const auto path = put("magic.npy", bytes);
  EXPECT_TRUE(throwsWith<FileError>([&] { (void)readNpy(path); }, {"magic.npy"}));
  const auto text = put("text.npy", "this is not a numpy file at all, just some text that is long enough\n");
  EXPECT_TRUE(throwsWith<FileError>([&] { (void)readNpyMatrix<double>(text); }, {"text.npy"}));
  const auto empty = put("empty.npy", "");
  EXPECT_TRUE(throwsWith<FileError>([&] { (void)readNpy(empty); }, {"empty.npy"}));
}

TEST_F(Npy, TruncatedDataIsRejected) {
  std::vector<double> five(k23.begin(), k23.begin() + 5);
  const auto path = put("trunc.npy", npyFile(dict("<f8", "(2, 3)"), raw(five)));
  EXPECT_TRUE(throwsWith<FileError>([&] { (void)readNpy(path); }, {"trunc.npy"}));
  std::string partial = npyFile(dict("<f8", "(2, 3)"), raw(k23));
  partial.resize(partial.size() - 3);  // cut inside the last value
  const auto p2 = put("trunc2.npy", partial);
  EXPECT_TRUE(throwsWith<FileError>([&] { (void)readNpyMatrix<double>(p2); }, {"trunc2.npy"}));
}

TEST_F(Npy, HeaderLengthBeyondFileIsRejected) {
  std::string bytes = npyFile(dict("<f8", "(2, 3)"), raw(k23));
  bytes[8] = char(0xff);  // header length 0xff?? > file size
  bytes[9] = char(0x7f);
  const auto path = put("hlen.npy", bytes);
  EXPECT_TRUE(throwsWith<FileError>([&] { (void)readNpy(path); }, {"hlen.npy"}));
  // Version 2.0 with a 4-byte length of about 2^31: must not try to allocate it.
  std::string big = npyFile(dict("<f8", "(2, 3)"), raw(k23), 2);
  big[8] = big[9] = big[10] = char(0xff);
  big[11] = char(0x7f);
  const auto p2 = put("hlen2.npy", big);
  EXPECT_TRUE(throwsWith<FileError>([&] { (void)readNpy(p2); }, {"hlen2.npy"}));
  // Only the magic and version.
  const auto p3 = put("stub.npy", std::string("\x93NUMPY\x01\x00", 8));
  EXPECT_TRUE(throwsWith<FileError>([&] { (void)readNpy(p3); }, {"stub.npy"}));
}

TEST_F(Npy, ShapeLargerThanDataOrAbsurdIsRejected) {
  // A shape whose byte count overflows 64 bits must be a clean error, not a huge allocation or a crash.
  const auto path = put("huge.npy", npyFile(dict("<f8", "(4611686018427387904, 4)"), raw(k23)));
  EXPECT_TRUE(throwsWith<FileError>([&] { (void)readNpy(path); }, {"huge.npy"}));
  const auto neg = put("neg.npy", npyFile(dict("<f8", "(-2, 3)"), raw(k23)));
  EXPECT_TRUE(throwsWith<FileError>([&] { (void)readNpy(neg); }, {"neg.npy"}));
  const auto garbage = put("garbage.npy", npyFile("{'descr': '<f8', 'fortran_order': False, 'shape': (2, x)}", raw(k23)));
  EXPECT_TRUE(throwsWith<FileError>([&] { (void)readNpy(garbage); }, {"garbage.npy"}));
}

// Found by the fuzzer (tests/fuzz/corpus/npy/found-shape-wraps-to-zero): 2^40 × 2^30 elements wrap a 64-bit count
// to exactly 0, which matched an empty data section and sized a matrix of 2^70 entries from the shape.
TEST_F(Npy, ElementCountThatWrapsToZeroIsRejected) {
  const auto path = put("wrap.npy", npyFile(dict("<f8", "(1099511627776, 1073741824)"), ""));
  EXPECT_TRUE(throwsWith<FileError>([&] { (void)readNpyMatrix<double>(path); }, {"wrap.npy", "truncated"}));
  const auto empty = put("empty.npy", npyFile(dict("<f8", "(0, 1073741824)"), ""));
  EXPECT_EQ(readNpyMatrix<double>(empty).size(), 0);
}

TEST_F(Npy, UnsupportedDtypeIsRejected) {
  const std::vector<double> c = {1, 0, 2, 0, 3, 0};  // 3 complex128 values
  const auto path = put("complex.npy", npyFile(dict("<c16", "(3,)"), raw(c)));
  EXPECT_TRUE(throwsWith<FileError>([&] { (void)readNpyMatrix<double>(path); }, {"complex.npy", "c16"}));
  const auto obj = put("object.npy", npyFile(dict("|O", "(3,)"), raw(c)));
  EXPECT_TRUE(throwsWith<FileError>([&] { (void)readNpyMatrix<double>(obj); }, {"object.npy"}));
  const auto str = put("string.npy", npyFile(dict("<U4", "(3,)"), std::string(48, 'a')));
  EXPECT_TRUE(throwsWith<FileError>([&] { (void)readNpyMatrix<double>(str); }, {"string.npy"}));
}

// Big-endian data: either read correctly (byte-swapped) or refused with a FileError; never silently
// misread.
TEST_F(Npy, BigEndianIsReadCorrectlyOrRefused) {
  std::string data = raw(k23);
  for (size_t i = 0; i < k23.size(); ++i) std::reverse(data.begin() + 8 * i, data.begin() + 8 * (i + 1));
  const auto path = put("be.npy", npyFile(dict(">f8", "(2, 3)"), data));
  try {
    EXPECT_TRUE(test::matricesIdentical(readNpyMatrix<double>(path), expected23()));
  } catch (const FileError& e) {
    EXPECT_NE(std::string(e.what()).find("be.npy"), std::string::npos) << e.what();
  }
}

TEST_F(Npy, ThreeDimensionalIsNotAMatrix) {
  const std::vector<double> v(8, 1.0);
  const auto path = put("cube.npy", npyFile(dict("<f8", "(2, 2, 2)"), raw(v)));
  EXPECT_TRUE(throwsWith<FileError>([&] { (void)readNpyMatrix<double>(path); }, {"cube.npy"}));
  const auto scalar = put("scalar.npy", npyFile(dict("<f8", "()"), raw(std::vector<double>{4.0})));
  EXPECT_TRUE(throwsWith<FileError>([&] { (void)readNpyMatrix<double>(scalar); }, {"scalar.npy"}));
}

TEST_F(Npy, MasksFromBoolAndIntegerArrays) {
  const std::vector<bool> expected = {true, false, true, true, false};
  const auto check = [&](const std::string& path) {
    const Mask m = readNpyMask(path);
    ASSERT_EQ(m.size(), 5) << path;
    for (int i = 0; i < 5; ++i) EXPECT_EQ(m(i), expected[i]) << path << " entry " << i;
  };
  check(put("b1.npy", npyFile(dict("|b1", "(5,)"), std::string("\x01\x00\x01\x01\x00", 5))));
  check(put("u1.npy", npyFile(dict("|u1", "(5,)"), std::string("\x01\x00\x01\x01\x00", 5))));
  check(put("i4.npy", npyFile(dict("<i4", "(5,)"), raw(std::vector<int32_t>{1, 0, 1, 1, 0}))));
  check(put("i8.npy", npyFile(dict("<i8", "(5,)"), raw(std::vector<int64_t>{1, 0, 1, 1, 0}))));
  check(put("f4.npy", npyFile(dict("<f4", "(5,)"), raw(std::vector<float>{1, 0, 1, 1, 0}))));
  check(put("f8.npy", npyFile(dict("<f8", "(5,)"), raw(std::vector<double>{1, 0, 1, 1, 0}))));
  check(put("col.npy", npyFile(dict("|b1", "(5, 1)"), std::string("\x01\x00\x01\x01\x00", 5))));
  const auto grid = put("grid.npy", npyFile(dict("|b1", "(2, 3)"), std::string(6, '\x01')));
  EXPECT_TRUE(throwsWith<FileError>([&] { (void)readNpyMask(grid); }, {"grid.npy"}));
}

// io/npy.h: "A mask: any numeric type ... nonzero = valid." Values other than 0/1 are valid tokens.
TEST_F(Npy, MaskReadsZeroOneFromAnyNumericType) {
  const std::vector<bool> expected = {true, false, true, true, false};
  const auto check = [&](const std::string& path) {
    const Mask m = readNpyMask(path);
    ASSERT_EQ(m.size(), 5) << path;
    for (int i = 0; i < 5; ++i) EXPECT_EQ(m(i), expected[i]) << path << " entry " << i;
  };
  check(put("b1.npy", npyFile(dict("|b1", "(5,)"), std::string("\x01\x00\x01\x01\x00", 5))));
  check(put("u1.npy", npyFile(dict("|u1", "(5,)"), std::string("\x01\x00\x01\x01\x00", 5))));
  check(put("i4.npy", npyFile(dict("<i4", "(5,)"), raw(std::vector<int32_t>{1, 0, 1, 1, 0}))));
  check(put("f8.npy", npyFile(dict("<f8", "(5,)"), raw(std::vector<double>{1, 0, 1, 1, 0}))));
}

// Anything but 0/1 is almost always the wrong file (token ids, attention weights): refuse it by name.
TEST_F(Npy, MaskRejectsValuesOtherThanZeroOrOne) {
  const std::string ids = put("ids.npy", npyFile(dict("<i4", "(5,)"), raw(std::vector<int32_t>{1, 0, 7, 1, 0})));
  EXPECT_TRUE(throwsWith<FileError>([&] { (void)readNpyMask(ids); }, {ids, "entry 2"}));
  const std::string half = put("half.npy", npyFile(dict("<f8", "(5,)"), raw(std::vector<double>{1, 0, 0.5, 1, 0})));
  EXPECT_TRUE(throwsWith<FileError>([&] { (void)readNpyMask(half); }, {half, "entry 2"}));
}

TEST_F(Npy, MissingFileNamesThePath) {
  const std::string path = dir.file("does_not_exist.npy");
  EXPECT_TRUE(throwsWith<FileError>([&] { (void)readNpy(path); }, {path}));
  EXPECT_TRUE(throwsWith<FileError>([&] { (void)readNpyMatrix<double>(path); }, {path}));
  EXPECT_TRUE(throwsWith<FileError>([&] { (void)readNpyMask(path); }, {path}));
}

std::string noSpaces(std::string s) {
  s.erase(std::remove(s.begin(), s.end(), ' '), s.end());
  return s;
}

template <class T, class M>
void expectBitIdentical(const M& a, const M& b) {
  ASSERT_EQ(a.rows(), b.rows());
  ASSERT_EQ(a.cols(), b.cols());
  EXPECT_EQ(std::memcmp(a.data(), b.data(), sizeof(T) * size_t(a.size())), 0);
}

TEST_F(Npy, WriteReadRoundTripIsBitExact) {
  MatD m = test::gaussian(5, 7, 1);
  m(0, 0) = -0.0;
  m(1, 1) = 4.9406564584124654e-324;  // smallest denormal
  m(2, 2) = 1.7976931348623157e308;
  m(3, 3) = 0.1;
  writeNpy(dir.file("m64.npy"), m);
  expectBitIdentical<double>(readNpyMatrix<double>(dir.file("m64.npy")), m);
  EXPECT_EQ(readNpy(dir.file("m64.npy")).dtype, "<f8");
  EXPECT_EQ(readNpy(dir.file("m64.npy")).shape, (std::vector<int64_t>{5, 7}));

  const MatF f = m.cast<float>();
  writeNpy(dir.file("m32.npy"), f);
  expectBitIdentical<float>(readNpyMatrix<float>(dir.file("m32.npy")), f);
  EXPECT_EQ(readNpy(dir.file("m32.npy")).dtype, "<f4");

  const VecD v = test::gaussian(9, 1, 2).col(0);
  writeNpy(dir.file("v64.npy"), v);
  EXPECT_EQ(readNpy(dir.file("v64.npy")).shape, (std::vector<int64_t>{9})) << "vectors are written 1-D";
  const MatD vm = readNpyMatrix<double>(dir.file("v64.npy"));
  expectBitIdentical<double>(vm, MatD(v));
  const Vec<float> vf = v.cast<float>();
  writeNpy(dir.file("v32.npy"), vf);
  EXPECT_EQ(readNpy(dir.file("v32.npy")).dtype, "<f4");
  expectBitIdentical<float>(readNpyMatrix<float>(dir.file("v32.npy")), MatF(vf));
}

TEST_F(Npy, EncodedHeaderIsStandard) {
  const std::vector<double> values = {1, 2, 3, 4, 5, 6};
  const std::string bytes = encodeNpy<double>(values.data(), {2, 3});
  ASSERT_GE(bytes.size(), 10u);
  EXPECT_EQ(bytes.substr(0, 6), "\x93NUMPY");
  const int major = bytes[6];
  ASSERT_TRUE(major == 1 || major == 2 || major == 3);
  size_t headerLen = uint8_t(bytes[8]) | (size_t(uint8_t(bytes[9])) << 8);
  size_t prefix = 10;
  if (major != 1) {
    headerLen |= (size_t(uint8_t(bytes[10])) << 16) | (size_t(uint8_t(bytes[11])) << 24);
    prefix = 12;
  }
  const size_t dataStart = prefix + headerLen;
  ASSERT_EQ(bytes.size(), dataStart + 6 * sizeof(double));
  EXPECT_EQ(dataStart % 16, 0u) << "data must be aligned";
  const std::string header = bytes.substr(prefix, headerLen);
  EXPECT_EQ(header.back(), '\n');
  const std::string compact = noSpaces(header);
  EXPECT_NE(compact.find("'descr':'<f8'"), std::string::npos) << header;
  EXPECT_NE(compact.find("'fortran_order':False"), std::string::npos) << header;
  EXPECT_NE(compact.find("'shape':(2,3)"), std::string::npos) << header;
  EXPECT_EQ(std::memcmp(bytes.data() + dataStart, values.data(), 6 * sizeof(double)), 0);
  // writeNpy writes exactly these bytes.
  MatD m(2, 3);
  m << 1, 2, 3, 4, 5, 6;
  writeNpy(dir.file("enc.npy"), m);
  EXPECT_EQ(test::readBytes(dir.file("enc.npy")), bytes);
  // 1-D shape is written the way numpy writes it.
  const std::string one = encodeNpy<double>(values.data(), {6});
  EXPECT_NE(noSpaces(one).find("'shape':(6,)"), std::string::npos) << "a 1-tuple needs its comma";
}

TEST_F(Npy, WritingIntoMissingFolderFails) {
  const std::string path = (dir.path() / "no" / "such" / "dir" / "x.npy").string();
  EXPECT_TRUE(throwsWith<FileError>([&] { writeNpy(path, MatD(MatD::Ones(2, 2))); }));
  EXPECT_TRUE(dir.list().empty());
}

}  // namespace
}  // namespace tl
