#include "io/checkpoint/torch_zip.h"

#include "common/errors.h"
#include "io/file_bytes.h"
#include "io/checkpoint/element_codec.h"
#include "io/checkpoint/torch_pickle.h"
#include "io/checkpoint/zip_archive.h"

namespace tl {
namespace {

using Kind = PickleValue::Kind;

// The unpickler refuses cycles and deep nesting, but containers may still be shared (the memo), and a pickle that
// puts one list twice into another, level after level, names 2^levels tensors. No checkpoint comes near this many
// values; a file that does is refused instead of flattened forever.
constexpr int64_t kMaxVisitedValues = int64_t(1) << 22;
// A broadcast view (stride 0) may describe more elements than its storage holds; expanding one beyond
// this many elements is refused rather than allocating whatever a corrupt header claims.
constexpr int64_t kMaxExpandedElements = int64_t(1) << 24;

// The one top-level folder every entry lives in: "<archive>/data.pkl". TorchScript archives have one too,
// next to constants.pkl, but pickle TorchScript classes this reader must not pretend to know.
const ZipEntry& findDataPickle(const ZipArchive& zip) {
  auto inTopFolder = [](const std::string& name, const std::string& file) {
    const size_t slash = name.find('/');
    return slash != std::string::npos && name.compare(slash, std::string::npos, "/" + file) == 0;
  };
  for (const auto& e : zip.entries()) {
    if (inTopFolder(e.name, "constants.pkl"))
      throw FileError(zip.path() + ": this is a TorchScript archive (torch.jit.save), not a torch.save checkpoint");
  }
  for (const auto& e : zip.entries())
    if (inTopFolder(e.name, "data.pkl")) return e;
  throw FileError(zip.path() + ": the zip holds no <archive>/data.pkl; it is not a PyTorch checkpoint");
}

class Flattener {
 public:
  Flattener(std::shared_ptr<ZipArchive> zip, std::string folder, std::vector<std::string>* skipped)
      : archive_(std::move(zip)), zip_(*archive_), folder_(std::move(folder)), skipped_(skipped) {}

  StoredTensorMap run(const PickleValue& root) {
    if (root.kind != Kind::Dict)
      throw FileError(zip_.path() + ": the checkpoint holds a " + pickleKindName(root.kind) +
                      ", not a dict of tensors");
    visit(root, "");
    return std::move(tensors_);
  }

 private:
  [[noreturn]] void failTensor(const std::string& name, const std::string& what) const {
    throw FileError(zip_.path() + ": tensor '" + name + "' " + what);
  }

  static std::string join(const std::string& prefix, const std::string& key) {
    return prefix.empty() ? key : prefix + "." + key;
  }

  void count() {
    if (++visited_ > kMaxVisitedValues)
      throw FileError(zip_.path() + ": the pickle's containers refer to each other more often than any checkpoint's; "
                      "the file is corrupt");
  }

  bool containsTensor(const PickleValue& v) {
    count();
    if (v.kind == Kind::Tensor) return true;
    if (v.items)
      for (const auto& item : *v.items)
        if (containsTensor(item)) return true;
    if (v.entries)
      for (const auto& [key, value] : *v.entries)
        if (containsTensor(value)) return true;
    return false;
  }

  void visit(const PickleValue& v, const std::string& name) {
    if (v.kind == Kind::Tensor) {
      add(name, *v.tensor);
    } else if (!containsTensor(v)) {
      if (skipped_) skipped_->push_back(name);
    } else if (v.kind == Kind::Dict) {
      for (const auto& [key, value] : *v.entries) visit(value, join(name, keyText(key, name)));
    } else {
      for (size_t i = 0; i < v.items->size(); ++i) visit((*v.items)[i], join(name, std::to_string(i)));
    }
  }

  std::string keyText(const PickleValue& key, const std::string& parent) const {
    if (key.kind == Kind::String) return key.text;
    if (key.kind == Kind::Int) return std::to_string(key.integer);
    throw FileError(zip_.path() + ": dict '" + parent + "' holding tensors has a " + pickleKindName(key.kind) +
                    " key; only str and int keys name tensors");
  }

  void add(const std::string& name, const TensorRef& ref) {
    if (tensors_.count(name)) failTensor(name, "appears twice; the file is corrupt");
    const StorageRef& s = ref.storage;
    const ZipEntry* entry = zip_.find(folder_ + "/data/" + s.key);
    if (!entry) failTensor(name, "refers to storage '" + s.key + "', which is missing from the archive");
    const std::string_view bytes = zip_.contents(*entry);
    const size_t itemSize = elementSize(s.type);
    if (uint64_t(s.numel) > bytes.size() / itemSize || bytes.size() != size_t(s.numel) * itemSize)
      failTensor(name, "has storage '" + s.key + "' of " + std::to_string(s.numel) + " " + storedTypeName(s.type) +
                           " elements, but its entry holds " + std::to_string(bytes.size()) + " bytes");

    StoredTensor t;
    t.shape = ref.size;
    t.stored = s.type;
    int64_t numel = 1, lastIndex = ref.offset;
    for (size_t d = 0; d < ref.size.size(); ++d) {
      int64_t reach = 0;
      if (__builtin_mul_overflow(numel, ref.size[d], &numel) ||
          (ref.size[d] > 0 && (__builtin_mul_overflow(ref.size[d] - 1, ref.stride[d], &reach) ||
                               __builtin_add_overflow(lastIndex, reach, &lastIndex))))
        failTensor(name, "has a size or stride so large that its extent overflows; the file is corrupt");
    }
    if (numel > 0 && lastIndex >= s.numel)
      failTensor(name, "reaches element " + std::to_string(lastIndex) + " of storage '" + s.key + "', which has " +
                           std::to_string(s.numel) + "; the file is corrupt");
    if (numel > s.numel && numel > kMaxExpandedElements)
      failTensor(name, "is a broadcast view of " + std::to_string(numel) + " elements over " + std::to_string(s.numel) +
                           " stored ones; refusing to expand it");
    if (!isContiguous(ref)) t.stride = ref.stride;
    // An empty view may point past its (empty) storage: it is never read.
    if (numel > 0) t.data = reinterpret_cast<const unsigned char*>(bytes.data()) + size_t(ref.offset) * itemSize;
    t.owner = archive_;
    tensors_.emplace(name, std::move(t));
  }

  // Most checkpoint tensors are contiguous row-major views and decode as one run.
  static bool isContiguous(const TensorRef& ref) {
    int64_t contiguousStride = 1;
    bool contiguous = true;
    for (size_t d = ref.size.size(); d-- > 0;) {
      contiguous &= ref.size[d] == 1 || ref.stride[d] == contiguousStride;
      contiguousStride *= ref.size[d];
    }
    return contiguous;
  }

  std::shared_ptr<ZipArchive> archive_;  // owns the mapped file and inflated entries the tensors point into
  ZipArchive& zip_;
  std::string folder_;
  std::vector<std::string>* skipped_;
  StoredTensorMap tensors_;
  int64_t visited_ = 0;
};

}  // namespace

StoredTensorMap mapTorchZip(const std::string& path, std::vector<std::string>* skippedLeaves) {
  std::shared_ptr<const FileBytes> bytes = FileBytes::map(path);
  // Before PyTorch 1.6 torch.save wrote a bare pickle stream (it starts with PROTO 2).
  const std::string_view head = bytes->view().substr(0, 2);
  if (head.size() == 2 && uint8_t(head[0]) == 0x80 && uint8_t(head[1]) == 0x02)
    throw FileError(path +
                    ": this is the legacy (pre-1.6) PyTorch format, which is not supported; re-save it with "
                    "a current torch.save");
  auto zip = std::make_shared<ZipArchive>(path, std::move(bytes));
  const ZipEntry& pickle = findDataPickle(*zip);
  const std::string folder = pickle.name.substr(0, pickle.name.find('/'));
  if (const ZipEntry* order = zip->find(folder + "/byteorder"); order && zip->contents(*order) != "little")
    throw FileError(path + ": storages are big-endian, which is not supported");
  const PickleValue root = loadTorchPickle(zip->contents(pickle), path + ": " + pickle.name);
  return Flattener(std::move(zip), folder, skippedLeaves).run(root);
}

TensorMap readTorchZip(const std::string& path, std::vector<std::string>* skippedLeaves) {
  return decodeAll(mapTorchZip(path, skippedLeaves));
}

}  // namespace tl
