#include "io/checkpoint/torch_pickle.h"

#include <cstring>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "common/errors.h"

namespace tl {
namespace {

using Kind = PickleValue::Kind;

// Opcode bytes from CPython's Lib/pickle.py; only those torch.save emits for dicts of tensors.
namespace op {
constexpr uint8_t MARK = '(', STOP = '.', NONE = 'N', NEWTRUE = 0x88, NEWFALSE = 0x89;
constexpr uint8_t BININT = 'J', BININT1 = 'K', BININT2 = 'M', LONG1 = 0x8a, BINFLOAT = 'G';
constexpr uint8_t BINUNICODE = 'X', SHORT_BINUNICODE = 0x8c;
constexpr uint8_t EMPTY_TUPLE = ')', TUPLE = 't', TUPLE1 = 0x85, TUPLE2 = 0x86, TUPLE3 = 0x87;
constexpr uint8_t EMPTY_LIST = ']', APPEND = 'a', APPENDS = 'e', EMPTY_DICT = '}', SETITEM = 's', SETITEMS = 'u';
constexpr uint8_t GLOBAL = 'c', REDUCE = 'R', BUILD = 'b', BINPERSID = 'Q';
constexpr uint8_t BINPUT = 'q', LONG_BINPUT = 'r', MEMOIZE = 0x94, BINGET = 'h', LONG_BINGET = 'j';
constexpr uint8_t PROTO = 0x80, FRAME = 0x95;
}  // namespace op

constexpr int kHighestProtocol = 5;

// Names of the other opcodes, so an error says which construct the file used.
const char* otherOpcodeName(uint8_t code) {
  static const std::map<uint8_t, const char*> names = {{'0', "POP"},
                                                       {'1', "POP_MARK"},
                                                       {'2', "DUP"},
                                                       {'F', "FLOAT"},
                                                       {'I', "INT"},
                                                       {'L', "LONG"},
                                                       {'P', "PERSID"},
                                                       {'S', "STRING"},
                                                       {'T', "BINSTRING"},
                                                       {'U', "SHORT_BINSTRING"},
                                                       {'V', "UNICODE"},
                                                       {'B', "BINBYTES"},
                                                       {'C', "SHORT_BINBYTES"},
                                                       {'d', "DICT"},
                                                       {'g', "GET"},
                                                       {'i', "INST"},
                                                       {'l', "LIST"},
                                                       {'o', "OBJ"},
                                                       {'p', "PUT"},
                                                       {0x81, "NEWOBJ"},
                                                       {0x82, "EXT1"},
                                                       {0x83, "EXT2"},
                                                       {0x84, "EXT4"},
                                                       {0x8b, "LONG4"},
                                                       {0x8d, "BINUNICODE8"},
                                                       {0x8e, "BINBYTES8"},
                                                       {0x8f, "EMPTY_SET"},
                                                       {0x90, "ADDITEMS"},
                                                       {0x91, "FROZENSET"},
                                                       {0x92, "NEWOBJ_EX"},
                                                       {0x93, "STACK_GLOBAL"},
                                                       {0x96, "BYTEARRAY8"},
                                                       {0x97, "NEXT_BUFFER"},
                                                       {0x98, "READONLY_BUFFER"}};
  const auto it = names.find(code);
  return it == names.end() ? "unknown" : it->second;
}

const std::map<std::string, StoredType>& storageTypes() {
  static const std::map<std::string, StoredType> types = {
      {"torch.FloatStorage", StoredType::F32},     {"torch.HalfStorage", StoredType::F16},
      {"torch.BFloat16Storage", StoredType::BF16}, {"torch.DoubleStorage", StoredType::F64},
      {"torch.LongStorage", StoredType::I64},      {"torch.IntStorage", StoredType::I32},
      {"torch.ByteStorage", StoredType::U8},       {"torch.BoolStorage", StoredType::Bool}};
  return types;
}

constexpr char kOrderedDict[] = "collections.OrderedDict";
constexpr char kRebuildTensor[] = "torch._utils._rebuild_tensor_v2";
constexpr char kRebuildParameter[] = "torch._utils._rebuild_parameter";

PickleValue valueOf(Kind kind) {
  PickleValue v;
  v.kind = kind;
  if (kind == Kind::Tuple || kind == Kind::List) v.items = std::make_shared<std::vector<PickleValue>>();
  if (kind == Kind::Dict) v.entries = std::make_shared<std::vector<std::pair<PickleValue, PickleValue>>>();
  return v;
}

// Deeper than any checkpoint nests its dicts and lists; deeper structures would also overflow the stack when their
// shared containers are released.
constexpr int kMaxNesting = 256;

class Unpickler {
 public:
  Unpickler(std::string_view bytes, const std::string& where) : bytes_(bytes), where_(where) {}

  // A pickle can make a container hold itself (APPEND a memo'd list to itself), which torch.save never does but
  // which would leak the shared containers. The containers the result does not reach, or all of them when the
  // pickle is refused, are emptied here; that breaks every cycle, and releases nested containers one by one.
  ~Unpickler() {
    auto kept = [&](const void* container) { return accepted_ && reached_.count(container); };
    for (auto& items : tuplesAndLists_)
      if (!kept(items.get())) items->clear();
    for (auto& entries : dicts_)
      if (!kept(entries.get())) entries->clear();
  }

  PickleValue run() {
    while (pos_ < bytes_.size()) {
      opStart_ = pos_;
      const uint8_t code = next<uint8_t>();
      if (code == op::STOP) {
        if (stack_.empty()) fail("STOP with an empty stack");
        checkAcyclic(stack_.back());
        accepted_ = true;
        return stack_.back();
      }
      execute(code);
    }
    fail("the pickle ends without STOP; the file is truncated");
  }

 private:
  // Every tuple, list and dict is made here, so the destructor can reach them all.
  PickleValue container(Kind kind, std::vector<PickleValue> items = {}) {
    PickleValue v = valueOf(kind);
    if (v.items) {
      *v.items = std::move(items);
      tuplesAndLists_.push_back(v.items);
    }
    if (v.entries) dicts_.push_back(v.entries);
    return v;
  }

  // Depth-first over the containers of `result` (iteratively: the nesting is what is being checked). Fills
  // reached_; refuses a container inside itself and nesting beyond kMaxNesting.
  void checkAcyclic(const PickleValue& result) {
    struct Visit {
      const PickleValue* value;
      size_t next;  // the next child to visit
    };
    std::vector<Visit> path{{&result, 0}};
    std::unordered_set<const void*> onPath;
    auto identity = [](const PickleValue& v) -> const void* {
      return v.items ? static_cast<const void*>(v.items.get()) : static_cast<const void*>(v.entries.get());
    };
    auto childCount = [](const PickleValue& v) { return v.items ? v.items->size() : v.entries ? 2 * v.entries->size() : 0; };
    auto child = [](const PickleValue& v, size_t i) -> const PickleValue& {
      if (v.items) return (*v.items)[i];
      return i % 2 == 0 ? (*v.entries)[i / 2].first : (*v.entries)[i / 2].second;
    };
    if (!identity(result)) return;
    onPath.insert(identity(result));
    reached_.insert(identity(result));
    while (!path.empty()) {
      Visit& top = path.back();
      if (top.next == childCount(*top.value)) {
        onPath.erase(identity(*top.value));
        path.pop_back();
        continue;
      }
      const PickleValue& c = child(*top.value, top.next++);
      const void* id = identity(c);
      if (!id) continue;
      if (onPath.count(id)) fail("a list, tuple or dict contains itself; torch.save never writes that");
      if (path.size() >= size_t(kMaxNesting))
        fail("containers nest deeper than " + std::to_string(kMaxNesting) + " levels; torch.save never writes that");
      if (!reached_.insert(id).second) continue;  // shared, and already checked below another parent
      onPath.insert(id);
      path.push_back({&c, 0});
    }
  }

  [[noreturn]] void fail(const std::string& what) const {
    throw FileError(where_ + ": pickle byte " + std::to_string(opStart_) + ": " + what);
  }

  const char* take(size_t n) {
    if (n > bytes_.size() - pos_) fail("the pickle ends inside an opcode; the file is truncated");
    const char* p = bytes_.data() + pos_;
    pos_ += n;
    return p;
  }

  // Pickle integers are little-endian, as is the host.
  template <class T>
  T next() {
    T v;
    std::memcpy(&v, take(sizeof v), sizeof v);
    return v;
  }

  std::string line() {
    const size_t end = bytes_.find('\n', pos_);
    if (end == std::string_view::npos) fail("GLOBAL name is not terminated; the file is truncated");
    std::string s(bytes_.substr(pos_, end - pos_));
    pos_ = end + 1;
    return s;
  }

  // As in CPython, MARK starts a new stack: nothing below the newest mark can be popped.
  size_t floor() const { return marks_.empty() ? 0 : marks_.back(); }

  PickleValue& top() {
    if (stack_.size() <= floor()) fail("stack underflow; the pickle is corrupt");
    return stack_.back();
  }

  PickleValue pop() {
    PickleValue v = top();
    stack_.pop_back();
    return v;
  }

  std::vector<PickleValue> popToMark() {
    if (marks_.empty()) fail("no MARK to collect items from; the pickle is corrupt");
    std::vector<PickleValue> items(stack_.begin() + std::ptrdiff_t(marks_.back()), stack_.end());
    stack_.resize(marks_.back());
    marks_.pop_back();
    return items;
  }

  PickleValue& topOf(Kind kind, const char* opcode) {
    PickleValue& v = top();
    if (v.kind != kind)
      fail(std::string(opcode) + " on a " + pickleKindName(v.kind) + " instead of a " + pickleKindName(kind));
    return v;
  }

  void push(PickleValue v) { stack_.push_back(std::move(v)); }

  void pushInt(int64_t i) {
    PickleValue v = valueOf(Kind::Int);
    v.integer = i;
    push(std::move(v));
  }

  void pushString(size_t length) {
    PickleValue v = valueOf(Kind::String);
    v.text.assign(take(length), length);
    push(std::move(v));
  }

  void pushTuple(size_t n) {
    std::vector<PickleValue> items(n);
    for (size_t i = n; i-- > 0;) items[i] = pop();
    push(container(Kind::Tuple, std::move(items)));
  }

  void memoize(uint32_t index) { memo_[index] = top(); }

  void recall(uint32_t index) {
    const auto it = memo_.find(index);
    if (it == memo_.end()) fail("memo entry " + std::to_string(index) + " was never stored; the pickle is corrupt");
    push(it->second);
  }

  void execute(uint8_t code) {
    switch (code) {
      case op::PROTO:
        if (next<uint8_t>() > kHighestProtocol) fail("pickle protocol is newer than 5");
        return;
      case op::FRAME:
        take(8);
        return;  // framing only groups opcodes for buffered reading
      case op::MARK:
        marks_.push_back(stack_.size());
        return;
      case op::NONE:
        push(valueOf(Kind::None));
        return;
      case op::NEWTRUE:
      case op::NEWFALSE: {
        PickleValue v = valueOf(Kind::Bool);
        v.boolean = code == op::NEWTRUE;
        push(std::move(v));
        return;
      }
      case op::BININT:
        pushInt(next<int32_t>());
        return;
      case op::BININT1:
        pushInt(next<uint8_t>());
        return;
      case op::BININT2:
        pushInt(next<uint16_t>());
        return;
      case op::LONG1:
        long1();
        return;
      case op::BINFLOAT:
        binfloat();
        return;
      case op::BINUNICODE:
        pushString(next<uint32_t>());
        return;
      case op::SHORT_BINUNICODE:
        pushString(next<uint8_t>());
        return;
      case op::EMPTY_TUPLE:
        push(container(Kind::Tuple));
        return;
      case op::TUPLE:
        push(container(Kind::Tuple, popToMark()));
        return;
      case op::TUPLE1:
        pushTuple(1);
        return;
      case op::TUPLE2:
        pushTuple(2);
        return;
      case op::TUPLE3:
        pushTuple(3);
        return;
      case op::EMPTY_LIST:
        push(container(Kind::List));
        return;
      case op::APPEND: {
        PickleValue v = pop();
        topOf(Kind::List, "APPEND").items->push_back(std::move(v));
        return;
      }
      case op::APPENDS: {
        std::vector<PickleValue> items = popToMark();
        auto& list = *topOf(Kind::List, "APPENDS").items;
        list.insert(list.end(), items.begin(), items.end());
        return;
      }
      case op::EMPTY_DICT:
        push(container(Kind::Dict));
        return;
      case op::SETITEM: {
        PickleValue value = pop();
        PickleValue key = pop();
        topOf(Kind::Dict, "SETITEM").entries->emplace_back(std::move(key), std::move(value));
        return;
      }
      case op::SETITEMS:
        setItems();
        return;
      case op::GLOBAL:
        global();
        return;
      case op::REDUCE:
        reduce();
        return;
      case op::BUILD:
        build();
        return;
      case op::BINPERSID:
        persistentId();
        return;
      case op::BINPUT:
        memoize(next<uint8_t>());
        return;
      case op::LONG_BINPUT:
        memoize(next<uint32_t>());
        return;
      case op::MEMOIZE:
        memoize(uint32_t(memo_.size()));
        return;
      case op::BINGET:
        recall(next<uint8_t>());
        return;
      case op::LONG_BINGET:
        recall(next<uint32_t>());
        return;
      default: {
        char hex[8];
        std::snprintf(hex, sizeof hex, "0x%02x", code);
        fail(std::string("unsupported pickle opcode ") + hex + " (" + otherOpcodeName(code) +
             "); only the subset torch.save writes for dicts of tensors is read");
      }
    }
  }

  // Little-endian two's complement of 0–8 bytes; Python ints beyond int64 have no use in a checkpoint.
  void long1() {
    const size_t n = next<uint8_t>();
    if (n > 8) fail("integer of " + std::to_string(n) + " bytes does not fit in 64 bits");
    const auto* b = reinterpret_cast<const uint8_t*>(take(n));
    uint64_t u = 0;
    for (size_t i = 0; i < n; ++i) u |= uint64_t(b[i]) << (8 * i);
    if (n > 0 && n < 8 && (b[n - 1] & 0x80)) u |= ~uint64_t(0) << (8 * n);  // sign-extend
    int64_t i;
    std::memcpy(&i, &u, sizeof i);
    pushInt(i);
  }

  // BINFLOAT is the one big-endian field in pickle.
  void binfloat() {
    const auto* b = reinterpret_cast<const uint8_t*>(take(8));
    uint64_t u = 0;
    for (int i = 0; i < 8; ++i) u = u << 8 | b[i];
    PickleValue v = valueOf(Kind::Float);
    std::memcpy(&v.real, &u, sizeof u);
    push(std::move(v));
  }

  void setItems() {
    std::vector<PickleValue> items = popToMark();
    if (items.size() % 2 != 0) fail("SETITEMS with an odd number of items; the pickle is corrupt");
    auto& dict = *topOf(Kind::Dict, "SETITEMS").entries;
    for (size_t i = 0; i < items.size(); i += 2) dict.emplace_back(std::move(items[i]), std::move(items[i + 1]));
  }

  void global() {
    const std::string module = line();
    const std::string name = module + "." + line();
    if (name != kOrderedDict && name != kRebuildTensor && name != kRebuildParameter && !storageTypes().count(name))
      fail("unsupported global '" + name + "': only tensors, dicts and plain Python values can be read");
    PickleValue v = valueOf(Kind::Global);
    v.text = name;
    push(std::move(v));
  }

  void reduce() {
    const PickleValue args = pop();
    const PickleValue callable = pop();
    if (callable.kind != Kind::Global) fail(std::string("REDUCE calls a ") + pickleKindName(callable.kind));
    if (args.kind != Kind::Tuple) fail("REDUCE arguments are not a tuple; the pickle is corrupt");
    const auto& a = *args.items;
    if (callable.text == kOrderedDict) {
      if (!a.empty()) fail("collections.OrderedDict called with arguments, which is not supported");
      push(container(Kind::Dict));
    } else if (callable.text == kRebuildTensor) {
      push(rebuildTensor(a));
    } else if (callable.text == kRebuildParameter) {
      if (a.size() != 3 || a[0].kind != Kind::Tensor) fail("torch._utils._rebuild_parameter without a tensor");
      push(a[0]);
    } else {
      fail("'" + callable.text + "' cannot be called");
    }
  }

  std::vector<int64_t> intTuple(const PickleValue& v, const char* what) {
    if (v.kind != Kind::Tuple)
      fail(std::string("tensor ") + what + " is a " + pickleKindName(v.kind) + ", not a tuple");
    std::vector<int64_t> out;
    for (const auto& item : *v.items) {
      if (item.kind != Kind::Int || item.integer < 0)
        fail(std::string("tensor ") + what + " holds a negative or non-integer entry");
      out.push_back(item.integer);
    }
    return out;
  }

  // torch/_utils.py: _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad,
  // backward_hooks[, metadata]).
  PickleValue rebuildTensor(const std::vector<PickleValue>& a) {
    if (a.size() != 6 && a.size() != 7)
      fail("torch._utils._rebuild_tensor_v2 called with " + std::to_string(a.size()) + " arguments instead of 6");
    if (a[0].kind != Kind::Storage) fail("torch._utils._rebuild_tensor_v2 called without a storage");
    if (a[1].kind != Kind::Int || a[1].integer < 0) fail("tensor storage offset is not a non-negative integer");
    PickleValue v = valueOf(Kind::Tensor);
    v.tensor = std::make_shared<TensorRef>();
    v.tensor->storage = *a[0].storage;
    v.tensor->offset = a[1].integer;
    v.tensor->size = intTuple(a[2], "size");
    v.tensor->stride = intTuple(a[3], "stride");
    if (v.tensor->size.size() != v.tensor->stride.size())
      fail("tensor size and stride have different lengths; the pickle is corrupt");
    return v;
  }

  // OrderedDict pickles its attributes (a state_dict's _metadata) as BUILD state; they are not items.
  void build() {
    pop();
    const PickleValue& target = top();
    if (target.kind != Kind::Dict) fail(std::string("BUILD on a ") + pickleKindName(target.kind) + " is not supported");
  }

  // torch/serialization.py persistent_id: ('storage', storage_type, key, location, numel).
  void persistentId() {
    const PickleValue pid = pop();
    const auto* t = pid.kind == Kind::Tuple ? pid.items.get() : nullptr;
    if (!t || t->size() != 5 || (*t)[0].kind != Kind::String || (*t)[0].text != "storage")
      fail("persistent id is not a ('storage', type, key, location, numel) tuple");
    const PickleValue& type = (*t)[1];
    const auto storedType = storageTypes().find(type.text);
    if (type.kind != Kind::Global || storedType == storageTypes().end())
      fail("persistent id names no supported storage type");
    if ((*t)[2].kind != Kind::String || (*t)[4].kind != Kind::Int || (*t)[4].integer < 0)
      fail("persistent id has no string key or no element count");
    PickleValue v = valueOf(Kind::Storage);
    v.storage = std::make_shared<StorageRef>(StorageRef{(*t)[2].text, storedType->second, (*t)[4].integer});
    push(std::move(v));
  }

  std::string_view bytes_;
  std::string where_;
  size_t pos_ = 0;
  size_t opStart_ = 0;
  std::vector<PickleValue> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint32_t, PickleValue> memo_;
  std::vector<std::shared_ptr<std::vector<PickleValue>>> tuplesAndLists_;
  std::vector<std::shared_ptr<std::vector<std::pair<PickleValue, PickleValue>>>> dicts_;
  std::unordered_set<const void*> reached_;  // containers of the returned value
  bool accepted_ = false;                    // the returned value passed checkAcyclic: its containers stay intact
};

}  // namespace

const char* pickleKindName(PickleValue::Kind kind) {
  switch (kind) {
    case Kind::None:
      return "None";
    case Kind::Bool:
      return "bool";
    case Kind::Int:
      return "int";
    case Kind::Float:
      return "float";
    case Kind::String:
      return "str";
    case Kind::Tuple:
      return "tuple";
    case Kind::List:
      return "list";
    case Kind::Dict:
      return "dict";
    case Kind::Global:
      return "global";
    case Kind::Storage:
      return "storage";
    case Kind::Tensor:
      return "tensor";
  }
  return "?";
}

PickleValue loadTorchPickle(std::string_view bytes, const std::string& where) { return Unpickler(bytes, where).run(); }

}  // namespace tl
