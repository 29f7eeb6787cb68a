// The pickle subset: each supported opcode on hand-written bytes, the torch tensor globals, and refusals.
#include "io/checkpoint/torch_pickle.h"

#include <gtest/gtest.h>

#include <cmath>

#include "support/pickle_builder.h"
#include "support/test_util.h"

namespace tl {
namespace {

using Kind = PickleValue::Kind;
using test::Pickle;
using test::throwsWith;

PickleValue load(const Pickle& p) { return loadTorchPickle(p.bytes(), "f.pt: m/data.pkl"); }

[[nodiscard]] ::testing::AssertionResult fails(const Pickle& p, std::vector<std::string> needles) {
  needles.push_back("f.pt: m/data.pkl");
  return throwsWith<FileError>([&] { (void)load(p); }, needles);
}

const PickleValue& entry(const PickleValue& dict, const std::string& key) {
  for (const auto& [k, v] : *dict.entries)
    if (k.kind == Kind::String && k.text == key) return v;
  throw std::runtime_error("no key " + key);
}

TEST(TorchPickle, ReadsPlainValues) {
  Pickle p;
  p.proto().op('}').op('q').byte(0).mark();
  p.str("small").integer(200);
  p.str("int16").op('M').le(40000, 2);
  p.str("negative").integer(-5);
  p.str("long").integer(int64_t(1) << 40);
  p.str("long_negative").op(0x8a).byte(2).le(0xff00, 2);  // -256 in two bytes
  p.str("long_zero").op(0x8a).byte(0);
  p.str("pi").real(3.141592653589793);
  p.str("yes").op(0x88).str("no").op(0x89).str("none").op('N');
  p.str("short").op(0x8c).byte(3).raw("abc");
  p.str("list").op(']').mark().integer(1).integer(2).op('e').integer(3).op('a');
  p.str("pair").integer(1).str("a").op(0x86);
  p.str("triple").integer(1).integer(2).integer(3).op(0x87);
  p.str("single").integer(9).op(0x85);
  p.str("empty").op(')');
  p.op('u').stop();
  const PickleValue root = load(p);
  ASSERT_EQ(root.kind, Kind::Dict);
  EXPECT_EQ(root.entries->size(), 16u);
  EXPECT_EQ(entry(root, "small").integer, 200);
  EXPECT_EQ(entry(root, "int16").integer, 40000);
  EXPECT_EQ(entry(root, "negative").integer, -5);
  EXPECT_EQ(entry(root, "long").integer, int64_t(1) << 40);
  EXPECT_EQ(entry(root, "long_negative").integer, -256);
  EXPECT_EQ(entry(root, "long_zero").integer, 0);
  EXPECT_EQ(entry(root, "pi").real, 3.141592653589793);
  EXPECT_TRUE(entry(root, "yes").boolean);
  EXPECT_EQ(entry(root, "no").kind, Kind::Bool);
  EXPECT_FALSE(entry(root, "no").boolean);
  EXPECT_EQ(entry(root, "none").kind, Kind::None);
  EXPECT_EQ(entry(root, "short").text, "abc");
  ASSERT_EQ(entry(root, "list").items->size(), 3u);
  EXPECT_EQ((*entry(root, "list").items)[2].integer, 3);
  EXPECT_EQ(entry(root, "pair").kind, Kind::Tuple);
  EXPECT_EQ((*entry(root, "pair").items)[1].text, "a");
  EXPECT_EQ(entry(root, "triple").items->size(), 3u);
  EXPECT_EQ(entry(root, "single").items->size(), 1u);
  EXPECT_TRUE(entry(root, "empty").items->empty());
}

TEST(TorchPickle, MemoSharesContainersAndProtocol4FramingIsAccepted) {
  // {'a': L, 'b': L, 'c': L} for one list L, appended to through the memo after it was first stored.
  Pickle p;
  p.proto(4).op(0x95).le(0, 8).op('}').op(0x94);                  // dict → memo 0
  p.op(0x8c).byte(1).raw("a").op(0x94).op(']').op(0x94).op('s');  // 'a' → memo 1, list → memo 2
  p.str("b").op('j').le(2, 4).integer(7).op('a').op('s');         // LONG_BINGET 2, append 7
  p.str("c").op('h').byte(2).op('s');                             // BINGET 2
  p.op('r').le(1000, 4).op('.');                                  // LONG_BINPUT, STOP
  const PickleValue root = load(p);
  ASSERT_EQ(root.kind, Kind::Dict);
  ASSERT_EQ(entry(root, "a").items->size(), 1u);
  EXPECT_EQ((*entry(root, "a").items)[0].integer, 7);
  EXPECT_EQ(entry(root, "b").items, entry(root, "a").items);
  EXPECT_EQ(entry(root, "c").items, entry(root, "a").items);
}

// Found by the fuzzer (tests/fuzz/corpus/torch_pickle/found-list-in-itself): a list appended to itself through the
// memo. Python allows it; torch.save never writes it, and the shared containers would form a cycle that leaks.
TEST(TorchPickle, RefusesContainersInsideThemselvesAndExtremeNesting) {
  EXPECT_TRUE(fails(Pickle().proto().op(']').op('q').byte(0).op('h').byte(0).op('a').op('.'), {"contains itself"}));
  // The cycle may also go through a dict, and hide below the returned value.
  EXPECT_TRUE(fails(Pickle().proto().op('}').op('q').byte(0).str("k").op(']').op('h').byte(0).op('a').op('s').op('.'),
                    {"contains itself"}));
  // A cycle in a value the pickle drops is released without an error (LeakSanitizer checks the release).
  const PickleValue kept = load(Pickle().proto().op(']').op('q').byte(0).op('h').byte(0).op('a').integer(3).op('.'));
  EXPECT_EQ(kept.integer, 3);
  Pickle deep;
  deep.proto();
  for (int i = 0; i < 300; ++i) deep.op(']');
  for (int i = 0; i < 299; ++i) deep.op('a');
  EXPECT_TRUE(fails(deep.op('.'), {"deeper than 256"}));
}

TEST(TorchPickle, RebuildsTensorsFromPersistentStorages) {
  Pickle p;
  p.proto().orderedDict().mark();
  p.str("w").tensor("HalfStorage", "7", 12, 3, {2, 3}, {1, 2});
  p.str("p").global("torch._utils", "_rebuild_parameter").mark();
  p.tensor("FloatStorage", "0", 4, 0, {4}, {1}).op(0x88).orderedDict().op('t').op('R');
  p.op('u');
  p.op('}').str("_metadata").op('}').op('s').op('b');  // OrderedDict attributes arrive through BUILD
  p.stop();
  const PickleValue root = load(p);
  const TensorRef& w = *entry(root, "w").tensor;
  EXPECT_EQ(w.storage.key, "7");
  EXPECT_EQ(w.storage.type, StoredType::F16);
  EXPECT_EQ(w.storage.numel, 12);
  EXPECT_EQ(w.offset, 3);
  EXPECT_EQ(w.size, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(w.stride, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(entry(root, "p").kind, Kind::Tensor);
  EXPECT_EQ(entry(root, "p").tensor->storage.type, StoredType::F32);
}

TEST(TorchPickle, KnowsEveryStorageType) {
  const std::vector<std::pair<std::string, StoredType>> types = {
      {"FloatStorage", StoredType::F32},  {"HalfStorage", StoredType::F16}, {"BFloat16Storage", StoredType::BF16},
      {"DoubleStorage", StoredType::F64}, {"LongStorage", StoredType::I64}, {"IntStorage", StoredType::I32},
      {"ByteStorage", StoredType::U8},    {"BoolStorage", StoredType::Bool}};
  for (const auto& [name, type] : types) {
    Pickle p;
    p.proto().tensor(name, "0", 1, 0, {}, {}).stop();
    EXPECT_EQ(load(p).tensor->storage.type, type) << name;
  }
}

TEST(TorchPickle, RefusesUnsupportedOpcodesAndGlobalsByName) {
  EXPECT_TRUE(fails(Pickle().proto().op(0x81), {"byte 2", "unsupported pickle opcode 0x81", "NEWOBJ"}));
  EXPECT_TRUE(fails(Pickle().proto().op('B'), {"0x42", "BINBYTES"}));
  EXPECT_TRUE(fails(Pickle().proto().op(0xfe), {"0xfe", "unknown"}));
  EXPECT_TRUE(fails(Pickle().proto().global("os", "system"), {"unsupported global 'os.system'"}));
  EXPECT_TRUE(fails(Pickle().proto().global("torch", "ComplexFloatStorage"), {"'torch.ComplexFloatStorage'"}));
  EXPECT_TRUE(fails(Pickle().proto().global("numpy.core.multiarray", "scalar"), {"'numpy.core.multiarray.scalar'"}));
  EXPECT_TRUE(fails(Pickle().proto(6), {"protocol"}));
}

TEST(TorchPickle, RefusesTruncatedAndCorruptStreams) {
  EXPECT_TRUE(fails(Pickle().proto().op('}'), {"without STOP", "truncated"}));
  EXPECT_TRUE(fails(Pickle().proto().op('X').le(1000, 4).raw("abc"), {"byte 2", "ends inside an opcode", "truncated"}));
  EXPECT_TRUE(fails(Pickle().proto().op('c').raw("torch"), {"not terminated"}));
  EXPECT_TRUE(fails(Pickle().proto().op('h').byte(5), {"memo entry 5"}));
  EXPECT_TRUE(fails(Pickle().proto().op('s'), {"stack underflow"}));
  EXPECT_TRUE(fails(Pickle().proto().op('}').mark().op('s'), {"stack underflow"}));  // cannot pop below a MARK
  EXPECT_TRUE(fails(Pickle().proto().op('t'), {"no MARK"}));
  EXPECT_TRUE(fails(Pickle().proto().op('}').mark().integer(1).op('u'), {"odd number"}));
  EXPECT_TRUE(fails(Pickle().proto().op('}').integer(1).op('a'), {"APPEND on a dict"}));
  EXPECT_TRUE(fails(Pickle().proto().op(']').integer(1).integer(2).op('s'), {"SETITEM on a list"}));
  EXPECT_TRUE(fails(Pickle().proto().op(0x8a).byte(9).le(0, 8).byte(0), {"9 bytes", "64 bits"}));
  EXPECT_TRUE(fails(Pickle().proto().op('.'), {"STOP with an empty stack"}));
  EXPECT_TRUE(fails(Pickle().proto().integer(1).op('b'), {"stack underflow"}));
  EXPECT_TRUE(fails(Pickle().proto().integer(1).op('}').op('b'), {"BUILD on a int"}));
}

TEST(TorchPickle, RefusesMalformedTensorsAndPersistentIds) {
  EXPECT_TRUE(fails(Pickle().proto().mark().str("storage").integer(1).op('t').op('Q'), {"persistent id"}));
  EXPECT_TRUE(fails(Pickle().proto().str("storage").op('Q'), {"persistent id"}));
  EXPECT_TRUE(fails(Pickle()
                        .proto()
                        .mark()
                        .str("storage")
                        .global("torch", "FloatStorage")
                        .integer(0)
                        .str("cpu")
                        .integer(1)
                        .op('t')
                        .op('Q'),
                    {"persistent id has no string key"}));
  EXPECT_TRUE(fails(Pickle().proto().global("torch._utils", "_rebuild_tensor_v2").mark().integer(1).op('t').op('R'),
                    {"_rebuild_tensor_v2", "1 arguments"}));
  // size and stride of different lengths
  Pickle mismatch;
  mismatch.proto().global("torch._utils", "_rebuild_tensor_v2").mark();
  mismatch.mark().str("storage").global("torch", "FloatStorage").str("0").str("cpu").integer(4).op('t').op('Q');
  mismatch.integer(0).tuple({2, 2}).tuple({1}).op(0x89).orderedDict().op('t').op('R');
  EXPECT_TRUE(fails(mismatch, {"size and stride"}));
  EXPECT_TRUE(fails(Pickle().proto().global("torch", "FloatStorage").op(')').op('R'),
                    {"'torch.FloatStorage' cannot be called"}));
  EXPECT_TRUE(fails(Pickle().proto().global("collections", "OrderedDict").mark().integer(1).op('t').op('R'),
                    {"OrderedDict called with arguments"}));
}

}  // namespace
}  // namespace tl
