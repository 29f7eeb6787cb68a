// safetensors: round trips in F32/F16/BF16, hand-made files of every dtype, and each strict-parsing failure.
#include "io/checkpoint/safetensors.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>

#include "io/checkpoint/half_float.h"
#include "support/test_util.h"

namespace tl {
namespace {

using test::kFloatInf;
using test::sameBits;
using test::throwsWith;

const float kNaN = std::numeric_limits<float>::quiet_NaN();

// A file from its parts: 8-byte little-endian header length, header text, data section.
std::string safetensorsBytes(const std::string& header, const std::string& data) {
  std::string out(8, '\0');
  const uint64_t n = header.size();
  std::memcpy(out.data(), &n, 8);
  return out + header + data;
}

template <class T>
std::string raw(const std::vector<T>& values) {
  std::string s(values.size() * sizeof(T), '\0');
  std::memcpy(s.data(), values.data(), s.size());
  return s;
}

HostTensor tensor(std::vector<int64_t> shape, std::vector<float> values) {
  HostTensor t;
  t.shape = std::move(shape);
  t.values = std::move(values);
  return t;
}

class Safetensors : public ::testing::Test {
 protected:
  std::string put(const std::string& bytes, const std::string& name = "model.safetensors") {
    const std::string path = dir.file(name);
    test::writeBytes(path, bytes);
    return path;
  }
  // Reading `bytes` must fail with a FileError naming the file and every needle.
  [[nodiscard]] ::testing::AssertionResult rejects(const std::string& bytes, std::vector<std::string> needles) {
    const std::string path = put(bytes);
    needles.push_back(path);
    return throwsWith<FileError>([&] { (void)readSafetensors(path); }, needles);
  }
  // One tensor entry plus data, for the failure cases below.
  [[nodiscard]] ::testing::AssertionResult rejectsEntry(const std::string& entry, const std::string& data,
                                                        std::vector<std::string> needles) {
    return rejects(safetensorsBytes(R"({"w":)" + entry + "}", data), std::move(needles));
  }
  test::TempDir dir;
};

TEST_F(Safetensors, Float32RoundTripIsExact) {
  TensorMap tensors;
  tensors["blocks.0.qkv.weight"] = tensor({2, 3}, {1.5f, -0.0f, 3.1415927f, 1e-40f, kFloatInf, -kFloatInf});
  tensors["blocks.0.qkv.bias"] = tensor({3}, {kNaN, std::numeric_limits<float>::max(), 7});
  tensors["scalar"] = tensor({}, {42.0f});
  tensors["empty"] = tensor({0, 4}, {});
  const std::map<std::string, std::string> metadata = {{"format", "pt"}, {"note", "ünïcode"}};
  const std::string path = dir.file("model.safetensors");
  writeSafetensors(path, tensors, metadata);

  const SafetensorsFile file = readSafetensors(path);
  EXPECT_EQ(file.metadata, metadata);
  ASSERT_EQ(file.tensors.size(), tensors.size());
  for (const auto& [name, t] : tensors) {
    const HostTensor& r = file.tensors.at(name);
    EXPECT_EQ(r.shape, t.shape) << name;
    EXPECT_EQ(r.stored, StoredType::F32) << name;
    EXPECT_TRUE(sameBits(r.values, t.values)) << name;
  }
}

TEST_F(Safetensors, WrittenHeaderIsAlignedAndDescribesEachTensor) {
  TensorMap tensors;
  tensors["a"] = tensor({2}, {1, 2});
  tensors["b"] = tensor({1, 3}, {3, 4, 5});
  const std::string path = dir.file("x.safetensors");
  writeSafetensors(path, tensors, {}, StoredType::BF16);
  const std::string bytes = test::readBytes(path);
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  EXPECT_EQ(n % 8, 0u);
  EXPECT_EQ(bytes.size(), 8 + n + 5 * 2);
  const auto header = nlohmann::json::parse(bytes.substr(8, n));
  EXPECT_FALSE(header.contains("__metadata__"));
  EXPECT_EQ(header["a"]["dtype"], "BF16");
  EXPECT_EQ(header["a"]["data_offsets"], nlohmann::json::array({0, 4}));
  EXPECT_EQ(header["b"]["shape"], nlohmann::json::array({1, 3}));
  EXPECT_EQ(header["b"]["data_offsets"], nlohmann::json::array({4, 10}));
}

// The uint16 patterns written for `values`, read straight from the file's data section.
std::vector<uint16_t> writtenPatterns(const std::string& path, size_t count) {
  const std::string bytes = test::readBytes(path);
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  std::vector<uint16_t> patterns(count);
  std::memcpy(patterns.data(), bytes.data() + 8 + n, 2 * count);
  return patterns;
}

TEST_F(Safetensors, Float16WriteRoundsToNearestEvenAndKeepsSpecials) {
  const std::vector<float> values = {1.0f,
                                     -2.5f,
                                     65504.0f,
                                     65520.0f,  // rounds to inf
                                     kFloatInf,
                                     -kFloatInf,
                                     kNaN,
                                     std::ldexp(1.0f, -24),         // smallest subnormal
                                     std::ldexp(1.0f, -25),         // tie with 0 → 0
                                     std::ldexp(3.0f, -25),         // tie between 1 and 2 units → 2
                                     1.0f + std::ldexp(1.0f, -11),  // tie → 1.0
                                     1.0f + std::ldexp(3.0f, -11),  // tie → 1 + 2^-9
                                     -0.0f};
  const std::vector<uint16_t> expected = {0x3c00, 0xc100, 0x7bff, 0x7c00, 0x7c00, 0xfc00, 0x7e00,
                                          0x0001, 0x0000, 0x0002, 0x3c00, 0x3c02, 0x8000};
  TensorMap tensors;
  tensors["h"] = tensor({int64_t(values.size())}, values);
  const std::string path = dir.file("half.safetensors");
  writeSafetensors(path, tensors, {}, StoredType::F16);
  EXPECT_EQ(writtenPatterns(path, values.size()), expected);

  const HostTensor back = readSafetensors(path).tensors.at("h");
  EXPECT_EQ(back.stored, StoredType::F16);
  std::vector<float> widened;
  for (uint16_t h : expected) widened.push_back(halfToFloat(h));
  EXPECT_TRUE(sameBits(back.values, widened));
}

TEST_F(Safetensors, BFloat16WriteRoundsToNearestEvenAndKeepsSpecials) {
  const std::vector<float> values = {1.0f,
                                     -2.5f,
                                     std::numeric_limits<float>::max(),  // rounds to inf
                                     kFloatInf,
                                     kNaN,
                                     1.0f + std::ldexp(1.0f, -8),  // tie → 1.0
                                     1.0f + std::ldexp(3.0f, -8),  // tie → up to even
                                     std::ldexp(1.0f, -133)};      // subnormal 0x0001
  const std::vector<uint16_t> expected = {0x3f80, 0xc020, 0x7f80, 0x7f80, 0x7fc0, 0x3f80, 0x3f82, 0x0001};
  TensorMap tensors;
  tensors["b"] = tensor({2, 4}, values);
  const std::string path = dir.file("bf16.safetensors");
  writeSafetensors(path, tensors, {{"k", "v"}}, StoredType::BF16);
  EXPECT_EQ(writtenPatterns(path, values.size()), expected);
  const SafetensorsFile back = readSafetensors(path);
  EXPECT_EQ(back.metadata.at("k"), "v");
  EXPECT_EQ(back.tensors.at("b").stored, StoredType::BF16);
  EXPECT_EQ(back.tensors.at("b").shape, (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(back.tensors.at("b").values[6], 1.0f + std::ldexp(1.0f, -6));
}

TEST_F(Safetensors, ReadsEveryDtypeFromAHandMadeFile) {
  std::string data;
  auto span = [&](const std::string& bytes) {
    const size_t begin = data.size();
    data += bytes;
    return "[" + std::to_string(begin) + "," + std::to_string(data.size()) + "]";
  };
  const std::string header =
      R"({"__metadata__":{"source":"hand"},)"
      R"("f64":{"dtype":"F64","shape":[2],"data_offsets":)" +
      span(raw<double>({0.1, -1e300})) + "}," + R"("i64":{"dtype":"I64","shape":[2],"data_offsets":)" +
      span(raw<int64_t>({-7, int64_t(1) << 40})) + "}," + R"("i32":{"dtype":"I32","shape":[1,2],"data_offsets":)" +
      span(raw<int32_t>({-5, 1 << 24})) + "}," + R"("u8":{"dtype":"U8","shape":[3],"data_offsets":)" +
      span(std::string("\x00\x80\xff", 3)) + "}," + R"("mask":{"dtype":"BOOL","shape":[2],"data_offsets":)" +
      span(std::string("\x01\x00", 2)) + "}," + R"("f16":{"dtype":"F16","shape":[],"data_offsets":)" +
      span(raw<uint16_t>({0x3555})) + "}}";
  const SafetensorsFile file = readSafetensors(put(safetensorsBytes(header, data)));
  EXPECT_EQ(file.metadata.at("source"), "hand");
  EXPECT_EQ(file.tensors.at("f64").values, (std::vector<float>{0.1f, -kFloatInf}));
  EXPECT_EQ(file.tensors.at("f64").stored, StoredType::F64);
  EXPECT_EQ(file.tensors.at("i64").values, (std::vector<float>{-7.0f, 1099511627776.0f}));
  EXPECT_EQ(file.tensors.at("i32").values, (std::vector<float>{-5.0f, 16777216.0f}));
  EXPECT_EQ(file.tensors.at("i32").shape, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(file.tensors.at("u8").values, (std::vector<float>{0, 128, 255}));
  EXPECT_EQ(file.tensors.at("mask").values, (std::vector<float>{1, 0}));
  EXPECT_EQ(file.tensors.at("mask").stored, StoredType::Bool);
  EXPECT_TRUE(file.tensors.at("f16").shape.empty());
  EXPECT_EQ(file.tensors.at("f16").values, (std::vector<float>{halfToFloat(0x3555)}));
}

TEST_F(Safetensors, HeaderPaddingAndEmptyTensorsAreAccepted) {
  const std::string header = R"({"e":{"dtype":"F32","shape":[0],"data_offsets":[4,4]},)"
                             R"("x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}     )";
  const SafetensorsFile file = readSafetensors(put(safetensorsBytes(header, raw<float>({2.5f}))));
  EXPECT_TRUE(file.tensors.at("e").values.empty());
  EXPECT_EQ(file.tensors.at("x").values, (std::vector<float>{2.5f}));
}

TEST_F(Safetensors, RejectsFilesTooShortForTheHeaderLength) {
  EXPECT_TRUE(rejects("", {"0 bytes", "truncated"}));
  EXPECT_TRUE(rejects("abc", {"3 bytes", "truncated"}));
}

TEST_F(Safetensors, RejectsATruncatedFileNamingTheTensorThatRunsPastTheEnd) {
  TensorMap tensors;
  tensors["blocks.0.qkv.weight"] = tensor({4, 4}, std::vector<float>(16, 1.0f));
  const std::string path = dir.file("full.safetensors");
  writeSafetensors(path, tensors, {});
  const std::string bytes = test::readBytes(path);
  EXPECT_TRUE(rejects(bytes.substr(0, bytes.size() - 5),
                      {"tensor 'blocks.0.qkv.weight'", "[0, 64)", "beyond the data section (59 bytes)", "truncated"}));
  EXPECT_TRUE(rejects(bytes.substr(0, 20), {"header length", "beyond the end of the file (20 bytes)"}));
}

TEST_F(Safetensors, RejectsBadHeaderLengthsAndNonJsonHeaders) {
  EXPECT_TRUE(rejects(safetensorsBytes("", "x"), {"header length 0", "not plausible"}));
  // Not safetensors at all: a PNG's first 8 bytes read as an absurd header length.
  EXPECT_TRUE(rejects(std::string("\x89PNG\r\n\x1a\n", 8) + "rest", {"header length", "beyond the end of the file"}));
  EXPECT_TRUE(rejects(safetensorsBytes("[1, 2, 3]", ""), {"does not start with '{'"}));
  EXPECT_TRUE(rejects(safetensorsBytes(R"({"w": {"dtype": )", ""), {"not valid JSON"}));
}

TEST_F(Safetensors, RejectsOverlappingSpansNamingBothTensors) {
  const std::string header = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                             R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})";
  EXPECT_TRUE(rejects(safetensorsBytes(header, std::string(12, '\0')),
                      {"tensor 'b'", "[4, 12)", "overlaps tensor 'a'", "[0, 8)"}));
}

TEST_F(Safetensors, RejectsOffsetsOutOfRangeOrReversed) {
  EXPECT_TRUE(rejectsEntry(R"({"dtype":"F32","shape":[2],"data_offsets":[8,16]})", std::string(8, '\0'),
                           {"tensor 'w'", "[8, 16)", "beyond the data section (8 bytes)"}));
  EXPECT_TRUE(rejectsEntry(R"({"dtype":"F32","shape":[0],"data_offsets":[8,4]})", std::string(8, '\0'),
                           {"tensor 'w'", "end before they begin"}));
  EXPECT_TRUE(rejectsEntry(R"({"dtype":"F32","shape":[1],"data_offsets":[0,18446744073709551615]})", "",
                           {"tensor 'w'", "beyond the data section"}));
  EXPECT_TRUE(rejectsEntry(R"({"dtype":"F32","shape":[1],"data_offsets":[-4,0]})", "", {"tensor 'w'", "data_offsets"}));
}

TEST_F(Safetensors, RejectsUnknownDtypes) {
  EXPECT_TRUE(rejectsEntry(R"({"dtype":"F8_E4M3","shape":[1],"data_offsets":[0,1]})", "x",
                           {"tensor 'w'", "unknown dtype 'F8_E4M3'"}));
  EXPECT_TRUE(rejectsEntry(R"({"dtype":7,"shape":[1],"data_offsets":[0,1]})", "x", {"tensor 'w'", "'dtype'"}));
}

TEST_F(Safetensors, RejectsShapesThatDoNotMatchTheByteSpan) {
  EXPECT_TRUE(rejectsEntry(R"({"dtype":"F32","shape":[2,3],"data_offsets":[0,20]})", std::string(20, '\0'),
                           {"tensor 'w'", "shape [2,3]", "6 elements", "holds 20 bytes"}));
  EXPECT_TRUE(rejectsEntry(R"({"dtype":"F16","shape":[2],"data_offsets":[0,8]})", std::string(8, '\0'),
                           {"tensor 'w'", "F16", "holds 8 bytes"}));
  EXPECT_TRUE(rejectsEntry(R"({"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,4]})",
                           std::string(4, '\0'), {"tensor 'w'", "overflows"}));
  EXPECT_TRUE(rejectsEntry(R"({"dtype":"F32","shape":[-1],"data_offsets":[0,4]})", std::string(4, '\0'),
                           {"tensor 'w'", "negative"}));
  EXPECT_TRUE(rejectsEntry(R"({"dtype":"F32","shape":[1.5],"data_offsets":[0,4]})", std::string(4, '\0'),
                           {"tensor 'w'", "non-integer"}));
}

TEST_F(Safetensors, RejectsDuplicateNames) {
  const std::string header = R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                             R"("w":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})";
  EXPECT_TRUE(rejects(safetensorsBytes(header, std::string(8, '\0')), {"tensor 'w'", "appears twice"}));
}

TEST_F(Safetensors, RejectsMalformedFields) {
  EXPECT_TRUE(rejectsEntry(R"({"shape":[1],"data_offsets":[0,4]})", "abcd", {"tensor 'w'", "'dtype'"}));
  EXPECT_TRUE(rejectsEntry(R"({"dtype":"F32","data_offsets":[0,4]})", "abcd", {"tensor 'w'", "'shape'"}));
  EXPECT_TRUE(rejectsEntry(R"({"dtype":"F32","shape":[1]})", "abcd", {"tensor 'w'", "'data_offsets'"}));
  EXPECT_TRUE(
      rejectsEntry(R"({"dtype":"F32","shape":[1],"data_offsets":[0]})", "abcd", {"tensor 'w'", "'data_offsets'"}));
  EXPECT_TRUE(rejectsEntry("[1]", "", {"tensor 'w'", "not a JSON object"}));
  EXPECT_TRUE(
      rejects(safetensorsBytes(R"({"__metadata__":{"epoch":3}})", ""), {"'__metadata__'", "'epoch'", "not a string"}));
  EXPECT_TRUE(rejects(safetensorsBytes(R"({"__metadata__":[]})", ""), {"'__metadata__'"}));
}

TEST_F(Safetensors, WriteRejectsInconsistentTensorsAndLeavesNoFile) {
  const std::string path = dir.file("bad.safetensors");
  TensorMap wrongCount;
  wrongCount["w"] = tensor({2, 2}, {1, 2, 3});
  EXPECT_TRUE(throwsWith<InvalidArgument>([&] { writeSafetensors(path, wrongCount, {}); }, {"'w'", "3 values", "4"}));
  TensorMap fine;
  fine["w"] = tensor({1}, {1});
  EXPECT_TRUE(throwsWith<InvalidArgument>([&] { writeSafetensors(path, fine, {}, StoredType::I64); }, {"I64"}));
  TensorMap reserved;
  reserved["__metadata__"] = tensor({1}, {1});
  EXPECT_TRUE(throwsWith<InvalidArgument>([&] { writeSafetensors(path, reserved, {}); }, {"__metadata__"}));
  EXPECT_TRUE(dir.list().empty());
  EXPECT_TRUE(throwsWith<FileError>([&] { writeSafetensors(dir.file("missing/x.safetensors"), fine, {}); },
                                    {"missing/x.safetensors"}));
}

// mapSafetensors validates like readSafetensors and leaves the data in the mapped file: decoding a tensor gives the
// reader's values, and a file replaced on disk afterwards (as writeSafetensors replaces one) does not change them.
TEST_F(Safetensors, MappedTensorsDecodeAsTheReaderAndKeepTheirFile) {
  TensorMap tensors;
  tensors["w"] = tensor({2, 3}, {1.5f, -0.0f, 3.1415927f, 1e-40f, kFloatInf, -kFloatInf});
  tensors["b"] = tensor({3}, {kNaN, 2, 7});
  const std::string path = dir.file("model.safetensors");
  writeSafetensors(path, tensors, {{"format", "pt"}}, StoredType::BF16);
  const SafetensorsFile read = readSafetensors(path);
  const MappedSafetensors mapped = mapSafetensors(path);
  EXPECT_EQ(mapped.metadata, read.metadata);
  writeSafetensors(path, {{"other", tensor({1}, {0})}}, {});
  ASSERT_EQ(mapped.tensors.size(), 2u);
  for (const auto& [name, want] : read.tensors) {
    SCOPED_TRACE(name);
    const StoredTensor& t = mapped.tensors.at(name);
    EXPECT_EQ(t.shape, want.shape);
    EXPECT_EQ(t.stored, StoredType::BF16);
    EXPECT_TRUE(t.stride.empty());
    EXPECT_TRUE(sameBits(t.decode().values, want.values));
  }
}

TEST_F(Safetensors, MissingFileIsAFileError) {
  EXPECT_TRUE(
      throwsWith<FileError>([&] { (void)readSafetensors(dir.file("nope.safetensors")); }, {"nope.safetensors"}));
}

}  // namespace
}  // namespace tl
