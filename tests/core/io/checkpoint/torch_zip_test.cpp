// torch.save checkpoints: files written by PyTorch 1.13 (scripts/reference/make_checkpoint_file_fixtures.py)
// compared exactly with the float32 values PyTorch itself wrote next to them, and damaged archives built here.
#include "io/checkpoint/torch_zip.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <cstring>
#include <sstream>

#include "io/atomic_file.h"
#include "io/checkpoint/safetensors.h"
#include "support/pickle_builder.h"
#include "support/test_util.h"
#include "support/zip_writer.h"

namespace tl {
namespace {

using test::Pickle;
using test::sameBits;
using test::throwsWith;

const std::string kFixtures = std::string(TL_FIXTURE_DIR) + "/checkpoint_files/";

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// Every tensor of `checkpoint` against `<stem>_expected.safetensors`: names, shapes, stored types, bits.
void expectMatchesPyTorch(const std::string& checkpoint, const std::string& stem) {
  std::vector<std::string> skipped;
  const TensorMap tensors = readTorchZip(kFixtures + checkpoint, &skipped);
  const SafetensorsFile expected = readSafetensors(kFixtures + stem + "_expected.safetensors");
  ASSERT_EQ(tensors.size(), expected.tensors.size());
  for (const auto& [name, want] : expected.tensors) {
    SCOPED_TRACE(name);
    ASSERT_EQ(tensors.count(name), 1u);
    const HostTensor& got = tensors.at(name);
    EXPECT_EQ(got.shape, want.shape);
    EXPECT_EQ(storedTypeName(got.stored), expected.metadata.at("stored." + name));
    EXPECT_TRUE(sameBits(got.values, want.values));
  }
  EXPECT_EQ(skipped, lines(expected.metadata.at("skipped")));
}

TEST(TorchZip, StateDictMatchesPyTorchExactly) { expectMatchesPyTorch("state_dict.pt", "state_dict"); }

TEST(TorchZip, DeflatedStateDictMatchesPyTorchExactly) { expectMatchesPyTorch("state_dict_deflated.pt", "state_dict"); }

TEST(TorchZip, TrainingCheckpointFlattensNestedDictsAndSkipsPlainValues) {
  expectMatchesPyTorch("checkpoint_dict.pt", "checkpoint_dict");
  std::vector<std::string> skipped;
  const TensorMap tensors = readTorchZip(kFixtures + "checkpoint_dict.pt", &skipped);
  EXPECT_EQ(tensors.count("model.weight"), 1u);
  EXPECT_EQ(tensors.count("optimizer.state.0.momentum_buffer"), 1u);
  EXPECT_EQ(tensors.count("layers.1"), 1u);
  EXPECT_EQ(skipped, (std::vector<std::string>{"epoch", "best_accuracy", "name", "flags", "history",
                                               "optimizer.param_groups", "seen_tokens", "offset", "pair"}));
  EXPECT_NO_THROW(readTorchZip(kFixtures + "checkpoint_dict.pt"));  // the skipped list is optional
}

TEST(TorchZip, StridedViewsAreGatheredRowMajor) {
  const TensorMap t = readTorchZip(kFixtures + "state_dict.pt");
  // base = arange(12).reshape(3, 4) * 0.5 - 1
  auto base = [](int i) { return float(i) * 0.5f - 1.0f; };
  EXPECT_EQ(t.at("views.transposed").shape, (std::vector<int64_t>{4, 3}));
  EXPECT_EQ(t.at("views.transposed").values[1], base(4));  // [0][1] = base[1][0]
  EXPECT_EQ(t.at("views.window").values.front(), base(5));
  EXPECT_EQ(t.at("views.every_other_column").values,
            (std::vector<float>{base(0), base(2), base(4), base(6), base(8), base(10)}));
  EXPECT_EQ(t.at("views.broadcast").values, (std::vector<float>{1.5f, -2.0f, 4.0f, 1.5f, -2.0f, 4.0f}));
  EXPECT_TRUE(t.at("shapes.scalar").shape.empty());
  EXPECT_EQ(t.at("shapes.scalar").values, (std::vector<float>{3.5f}));
  EXPECT_EQ(t.at("shapes.empty").shape, (std::vector<int64_t>{0, 3}));
}

// mapTorchZip leaves the tensors in the mapped file: each decodes to exactly what readTorchZip returns (strided views
// included), and the tensors keep the mapping alive after the file itself is gone.
TEST(TorchZip, MappedTensorsDecodeAsTheReaderAndOutliveTheFile) {
  const test::TempDir dir;
  const std::string copy = dir.file("state_dict.pt");
  test::writeBytes(copy, readFile(kFixtures + "state_dict.pt"));
  const TensorMap read = readTorchZip(copy);
  const StoredTensorMap mapped = mapTorchZip(copy);
  std::filesystem::remove(copy);
  ASSERT_EQ(mapped.size(), read.size());
  for (const auto& [name, want] : read) {
    SCOPED_TRACE(name);
    ASSERT_EQ(mapped.count(name), 1u);
    const StoredTensor& t = mapped.at(name);
    EXPECT_EQ(t.shape, want.shape);
    EXPECT_EQ(t.stored, want.stored);
    std::vector<float> values(size_t(t.numel()), -12345.0f);
    t.decodeInto(values.data());
    EXPECT_TRUE(sameBits(values, want.values));
  }
  EXPECT_FALSE(mapped.at("views.transposed").stride.empty());  // decoded by walking its strides
  EXPECT_TRUE(mapped.at("views.base").stride.empty());         // one contiguous run
}

class TorchZipDamage : public ::testing::Test {
 protected:
  std::string put(const std::string& bytes) {
    const std::string path = dir.file("ckpt.pt");
    test::writeBytes(path, bytes);
    return path;
  }
  // A checkpoint whose data.pkl is `pickle` and whose storages are `storages` (key → bytes).
  std::string checkpoint(const Pickle& pickle, const std::vector<std::pair<std::string, std::string>>& storages) {
    std::vector<test::ZipInput> entries = {{"ckpt/data.pkl", pickle.bytes()}};
    for (const auto& [key, bytes] : storages) entries.push_back({"ckpt/data/" + key, bytes});
    return put(test::makeZip(entries));
  }
  [[nodiscard]] ::testing::AssertionResult fails(const std::string& path, std::vector<std::string> needles) {
    needles.push_back(path);
    return throwsWith<FileError>([&] { (void)readTorchZip(path); }, needles);
  }
  // {'w': tensor over FloatStorage '0' of `numel` elements}
  static Pickle oneTensor(int64_t numel, int64_t offset, const std::vector<int64_t>& size,
                          const std::vector<int64_t>& stride) {
    Pickle p;
    p.proto().op('}').str("w").tensor("FloatStorage", "0", numel, offset, size, stride).op('s').stop();
    return p;
  }
  test::TempDir dir;
};

TEST_F(TorchZipDamage, TruncatedFileIsRefused) {
  const std::string bytes = test::readBytes(kFixtures + "state_dict.pt");
  EXPECT_TRUE(fails(put(bytes.substr(0, bytes.size() / 2)), {"end-of-central-directory", "truncated"}));
}

TEST_F(TorchZipDamage, CorruptStorageFailsItsCrcCheck) {
  std::string bytes = test::readBytes(kFixtures + "state_dict.pt");
  const size_t name = bytes.find("state_dict/data/0");  // in storage 0's local header
  ASSERT_NE(name, std::string::npos);
  const size_t header = name - 30;
  ASSERT_EQ(bytes.compare(header, 4, "PK\x03\x04"), 0);
  // The data follow the name and the extra field, where PyTorch pads to align storages to 64 bytes.
  const size_t data = name + uint8_t(bytes[header + 26]) + 256 * uint8_t(bytes[header + 27]) +
                      uint8_t(bytes[header + 28]) + 256 * uint8_t(bytes[header + 29]);
  bytes[data] ^= 0x10;
  EXPECT_TRUE(fails(put(bytes), {"zip entry 'state_dict/data/", "CRC", "corrupt"}));
}

TEST_F(TorchZipDamage, LegacyAndNonCheckpointFilesAreNamed) {
  // The pre-1.6 format starts with a pickled magic number.
  EXPECT_TRUE(fails(put(std::string("\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19.", 15)), {"legacy"}));
  EXPECT_TRUE(fails(put(test::makeZip({{"m/other.txt", "x"}})), {"no <archive>/data.pkl"}));
  EXPECT_TRUE(fails(put(test::makeZip({{"m/data.pkl", "x"}, {"m/constants.pkl", "x"}})), {"TorchScript"}));
  EXPECT_TRUE(fails(put("plain text, not a zip"), {"zip"}));
}

TEST_F(TorchZipDamage, UnsupportedPickleContentNamesTheGlobal) {
  Pickle p;
  p.proto().op('}').str("args").global("argparse", "Namespace").op(')').op('R').op('s').stop();
  EXPECT_TRUE(fails(checkpoint(p, {}), {"ckpt/data.pkl", "unsupported global 'argparse.Namespace'"}));
  Pickle list;
  list.proto().op(']').stop();
  EXPECT_TRUE(fails(checkpoint(list, {}), {"holds a list, not a dict"}));
}

TEST_F(TorchZipDamage, StorageProblemsNameTheTensor) {
  const std::string sixFloats(24, '\0');
  EXPECT_TRUE(fails(checkpoint(oneTensor(6, 0, {2, 3}, {3, 1}), {}), {"tensor 'w'", "storage '0'", "missing"}));
  EXPECT_TRUE(fails(checkpoint(oneTensor(8, 0, {2, 3}, {3, 1}), {{"0", sixFloats}}),
                    {"tensor 'w'", "8 F32 elements", "holds 24 bytes"}));
  EXPECT_TRUE(fails(checkpoint(oneTensor(6, 1, {2, 3}, {3, 1}), {{"0", sixFloats}}),
                    {"tensor 'w'", "reaches element 6", "has 6", "corrupt"}));
  EXPECT_TRUE(
      fails(checkpoint(oneTensor(6, 0, {3, 3}, {1, 3}), {{"0", sixFloats}}), {"tensor 'w'", "reaches element 8"}));
  EXPECT_TRUE(fails(checkpoint(oneTensor(6, 0, {int64_t(1) << 40, int64_t(1) << 40}, {0, 0}), {{"0", sixFloats}}),
                    {"tensor 'w'", "overflows"}));
  EXPECT_TRUE(fails(checkpoint(oneTensor(6, 0, {int64_t(1) << 30}, {0}), {{"0", sixFloats}}),
                    {"tensor 'w'", "broadcast view", "refusing"}));
}

TEST_F(TorchZipDamage, EmptyViewsOfEmptyStoragesAreFine) {
  const TensorMap t = readTorchZip(checkpoint(oneTensor(0, 0, {0, 5}, {5, 1}), {{"0", ""}}));
  EXPECT_EQ(t.at("w").shape, (std::vector<int64_t>{0, 5}));
  EXPECT_TRUE(t.at("w").values.empty());
}

TEST_F(TorchZipDamage, DuplicateFlattenedNamesAreRefused) {
  Pickle p;
  p.proto().op('}').mark();
  p.str("a.b").tensor("FloatStorage", "0", 1, 0, {}, {});
  p.str("a").op('}').str("b").tensor("FloatStorage", "0", 1, 0, {}, {}).op('s');
  p.op('u').stop();
  EXPECT_TRUE(fails(checkpoint(p, {{"0", std::string(4, '\0')}}), {"tensor 'a.b'", "appears twice"}));
}

TEST_F(TorchZipDamage, DictKeysThatCannotNameTensorsAreRefused) {
  Pickle p;
  p.proto().op('}').integer(1).integer(2).op(0x86).tensor("FloatStorage", "0", 1, 0, {}, {}).op('s').stop();
  EXPECT_TRUE(fails(checkpoint(p, {{"0", std::string(4, '\0')}}), {"tuple key"}));
}

TEST_F(TorchZipDamage, BigEndianStoragesAreRefused) {
  std::vector<test::ZipInput> entries = {{"ckpt/data.pkl", oneTensor(1, 0, {1}, {1}).bytes()},
                                         {"ckpt/byteorder", "big"},
                                         {"ckpt/data/0", std::string(4, '\0')}};
  EXPECT_TRUE(fails(put(test::makeZip(entries)), {"big-endian"}));
}

TEST_F(TorchZipDamage, SelfReferencingPicklesDoNotRecurseForever) {
  // L = []; L.append(L); {'x': L} — a cycle no checkpoint has, but a corrupt file might.
  Pickle p;
  p.proto().op('}').str("x").op(']').op('q').byte(1).op('h').byte(1).op('a').op('s').stop();
  EXPECT_TRUE(fails(checkpoint(p, {}), {"contains itself"}));
}

TEST_F(TorchZipDamage, SharedContainersCannotMultiplyWithoutBound) {
  // T0 = [], T(k+1) = (Tk, Tk) for 40 levels: a few hundred bytes whose flattening would visit 2^40 values.
  Pickle p;
  p.proto().op('}').str("x").op(']').op('q').byte(0);
  for (int level = 1; level <= 40; ++level) p.op('h').byte(uint8_t(level - 1)).op(0x86).op('q').byte(uint8_t(level));
  p.op('s').stop();
  EXPECT_TRUE(fails(checkpoint(p, {}), {"refer to each other"}));
}

}  // namespace
}  // namespace tl
