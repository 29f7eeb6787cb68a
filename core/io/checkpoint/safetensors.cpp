#include "io/checkpoint/safetensors.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>
#include <vector>

#include "common/errors.h"
#include "io/atomic_file.h"
#include "io/file_bytes.h"
#include "io/checkpoint/element_codec.h"

namespace tl {
namespace {

using Json = nlohmann::json;

// The reference implementation refuses headers above 100 MB; a larger length means a corrupt file.
constexpr uint64_t kMaxHeaderBytes = 100ull << 20;
constexpr char kMetadataKey[] = "__metadata__";

struct Span {
  uint64_t begin = 0, end = 0;
  std::string name;
};

struct TensorEntry {
  StoredType type = StoredType::F32;
  std::vector<int64_t> shape;
  Span span;
};

[[noreturn]] void fail(const std::string& path, const std::string& what) { throw FileError(path + ": " + what); }

[[noreturn]] void failTensor(const std::string& path, const std::string& name, const std::string& what) {
  fail(path, "tensor '" + name + "' " + what);
}

bool parseDtype(const std::string& s, StoredType& t) {
  for (StoredType candidate : {StoredType::F32, StoredType::F16, StoredType::BF16, StoredType::F64, StoredType::I64,
                               StoredType::I32, StoredType::U8, StoredType::Bool}) {
    if (s == storedTypeName(candidate)) {
      t = candidate;
      return true;
    }
  }
  return false;
}

// nlohmann keeps the last of duplicate keys silently; a callback sees every top-level key as it is parsed.
Json parseHeaderJson(const std::string& path, const std::string& text) {
  std::set<std::string> seen;
  std::string duplicate;
  auto onEvent = [&](int depth, Json::parse_event_t event, Json& parsed) {
    if (event == Json::parse_event_t::key && depth == 1 && !seen.insert(parsed.get<std::string>()).second &&
        duplicate.empty())
      duplicate = parsed.get<std::string>();
    return true;
  };
  Json header;
  try {
    header = Json::parse(text, onEvent);
  } catch (const Json::exception& e) {
    fail(path, std::string("header is not valid JSON (") + e.what() + "); the file is corrupt");
  }
  if (!duplicate.empty()) failTensor(path, duplicate, "appears twice in the header; the file is corrupt");
  if (!header.is_object()) fail(path, "header is not a JSON object; the file is corrupt");
  return header;
}

std::map<std::string, std::string> parseMetadata(const std::string& path, const Json& field) {
  if (!field.is_object()) fail(path, std::string("field '") + kMetadataKey + "' is not an object of strings");
  std::map<std::string, std::string> metadata;
  for (const auto& [key, value] : field.items()) {
    if (!value.is_string()) fail(path, std::string("field '") + kMetadataKey + "' entry '" + key + "' is not a string");
    metadata[key] = value.get<std::string>();
  }
  return metadata;
}

TensorEntry parseEntry(const std::string& path, const std::string& name, const Json& field, uint64_t dataBytes) {
  if (!field.is_object()) failTensor(path, name, "is not a JSON object in the header");
  TensorEntry entry;
  entry.span.name = name;

  const auto dtype = field.find("dtype");
  if (dtype == field.end() || !dtype->is_string()) failTensor(path, name, "has no string field 'dtype'");
  if (!parseDtype(dtype->get<std::string>(), entry.type))
    failTensor(path, name,
               "has unknown dtype '" + dtype->get<std::string>() + "' (known: F32 F16 BF16 F64 I64 I32 U8 BOOL)");

  const auto shape = field.find("shape");
  if (shape == field.end() || !shape->is_array()) failTensor(path, name, "has no array field 'shape'");
  uint64_t numel = 1;
  for (const auto& d : *shape) {
    if (!d.is_number_unsigned())
      failTensor(path, name, "has shape " + shape->dump() + " with a non-integer or negative dimension");
    const uint64_t dim = d.get<uint64_t>();
    if (dim > uint64_t(INT64_MAX) || __builtin_mul_overflow(numel, dim, &numel))
      failTensor(path, name, "has shape " + shape->dump() + " whose element count overflows");
    entry.shape.push_back(int64_t(dim));
  }

  const auto offsets = field.find("data_offsets");
  if (offsets == field.end() || !offsets->is_array() || offsets->size() != 2 || !(*offsets)[0].is_number_unsigned() ||
      !(*offsets)[1].is_number_unsigned())
    failTensor(path, name, "has no field 'data_offsets' of two non-negative integers");
  entry.span.begin = (*offsets)[0].get<uint64_t>();
  entry.span.end = (*offsets)[1].get<uint64_t>();
  if (entry.span.begin > entry.span.end)
    failTensor(path, name, "data_offsets " + byteRange(entry.span.begin, entry.span.end) + " end before they begin");
  if (entry.span.end > dataBytes)
    failTensor(path, name,
               "data " + byteRange(entry.span.begin, entry.span.end) + " lies beyond the data section (" +
                   std::to_string(dataBytes) + " bytes); the file is truncated or corrupt");

  uint64_t bytes = 0;
  if (__builtin_mul_overflow(numel, uint64_t(elementSize(entry.type)), &bytes) ||
      bytes != entry.span.end - entry.span.begin)
    failTensor(path, name,
               "has shape " + shape->dump() + " of " + dtype->get<std::string>() + " (" + std::to_string(numel) +
                   " elements) but its data span " + byteRange(entry.span.begin, entry.span.end) + " holds " +
                   std::to_string(entry.span.end - entry.span.begin) + " bytes");
  return entry;
}

void rejectOverlaps(const std::string& path, std::vector<Span> spans) {
  // Empty tensors occupy no bytes, so they cannot overlap anything.
  spans.erase(std::remove_if(spans.begin(), spans.end(), [](const Span& s) { return s.begin == s.end; }), spans.end());
  std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) { return a.begin < b.begin; });
  for (size_t i = 1; i < spans.size(); ++i) {
    if (spans[i].begin < spans[i - 1].end)
      failTensor(path, spans[i].name,
                 "data " + byteRange(spans[i].begin, spans[i].end) + " overlaps tensor '" + spans[i - 1].name +
                     "' data " + byteRange(spans[i - 1].begin, spans[i - 1].end) + "; the file is corrupt");
  }
}

}  // namespace

MappedSafetensors mapSafetensors(const std::string& path) {
  const std::shared_ptr<const FileBytes> file = FileBytes::map(path);
  const std::string_view bytes = file->view();
  if (bytes.size() < 8)
    fail(path, "file is " + std::to_string(bytes.size()) +
                   " bytes, too short for a safetensors header length; the file is truncated or not safetensors");
  uint64_t headerBytes = 0;
  std::memcpy(&headerBytes, bytes.data(), 8);  // little-endian, as is the host
  if (headerBytes > bytes.size() - 8)
    fail(path, "header length " + std::to_string(headerBytes) + " is beyond the end of the file (" +
                   std::to_string(bytes.size()) + " bytes); the file is truncated or not safetensors");
  if (headerBytes < 2 || headerBytes > kMaxHeaderBytes)
    fail(path, "header length " + std::to_string(headerBytes) + " is not plausible; the file is not safetensors");
  if (bytes[8] != '{') fail(path, "header does not start with '{'; the file is not safetensors");

  const Json header = parseHeaderJson(path, std::string(bytes.substr(8, headerBytes)));
  const uint64_t dataStart = 8 + headerBytes;
  const uint64_t dataBytes = bytes.size() - dataStart;

  MappedSafetensors mapped;
  std::vector<Span> spans;
  const auto* data = reinterpret_cast<const unsigned char*>(bytes.data()) + dataStart;
  for (const auto& [name, field] : header.items()) {
    if (name == kMetadataKey) {
      mapped.metadata = parseMetadata(path, field);
      continue;
    }
    const TensorEntry entry = parseEntry(path, name, field, dataBytes);
    spans.push_back(entry.span);
    StoredTensor& t = mapped.tensors[name];
    t.shape = entry.shape;
    t.stored = entry.type;
    t.data = data + entry.span.begin;  // inside the data section, checked by parseEntry
    t.owner = file;
  }
  rejectOverlaps(path, spans);
  return mapped;
}

SafetensorsFile readSafetensors(const std::string& path) {
  MappedSafetensors mapped = mapSafetensors(path);
  return {decodeAll(mapped.tensors), std::move(mapped.metadata)};
}

void writeSafetensors(const std::string& path, const TensorMap& tensors,
                      const std::map<std::string, std::string>& metadata, StoredType as) {
  if (as != StoredType::F32 && as != StoredType::F16 && as != StoredType::BF16)
    throw InvalidArgument(path + ": cannot write tensors as " + storedTypeName(as) + ": only F32, F16 and BF16");
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header[kMetadataKey] = metadata;
  std::string data;
  for (const auto& [name, t] : tensors) {
    if (name == kMetadataKey) throw InvalidArgument(path + ": a tensor cannot be named '" + name + "'");
    for (int64_t d : t.shape)
      if (d < 0) throw InvalidArgument(path + ": tensor '" + name + "' has a negative dimension");
    if (int64_t(t.values.size()) != t.numel())
      throw InvalidArgument(path + ": tensor '" + name + "' has " + std::to_string(t.values.size()) +
                            " values but its shape needs " + std::to_string(t.numel()));
    const size_t begin = data.size();
    encodeElements(as, t.values.data(), t.values.size(), data);
    header[name] = {{"dtype", storedTypeName(as)}, {"shape", t.shape}, {"data_offsets", {begin, data.size()}}};
  }
  std::string text;
  try {
    text = header.dump();
  } catch (const nlohmann::ordered_json::exception&) {
    throw InvalidArgument(path + ": tensor names and metadata must be valid UTF-8");
  }
  // Pad with spaces so the data section starts 8-byte aligned, as the reference writer does.
  text.append((8 - text.size() % 8) % 8, ' ');
  std::string out(8, '\0');
  const uint64_t headerBytes = text.size();
  std::memcpy(out.data(), &headerBytes, 8);
  out.reserve(8 + text.size() + data.size());
  out += text;
  out += data;
  writeFileAtomically(path, out);
}

}  // namespace tl
