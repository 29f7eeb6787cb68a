#include "io/npy_cache.h"

#include <filesystem>
#include <list>
#include <mutex>
#include <utility>

#include "io/npy.h"

namespace tl {
std::string fileKey(const std::string& path) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) return {};
  const auto stamp = std::filesystem::last_write_time(path, ec);
  if (ec) return {};
  return path + "|" + std::to_string(size) + "|" + std::to_string(stamp.time_since_epoch().count());
}

namespace {

// Enough for every file parameter of a compare session (two operators, a few files each).
constexpr size_t kFilesKept = 16;

}  // namespace

MatD readNpyMatrixCached(const std::string& path) {
  static std::mutex mutex;
  static std::list<std::pair<std::string, MatD>> cache;  // most recently used first

  const std::string key = fileKey(path);
  if (key.empty()) return readNpyMatrix<double>(path);  // let the reader say what is wrong
  {
    std::lock_guard<std::mutex> lock(mutex);
    for (auto it = cache.begin(); it != cache.end(); ++it)
      if (it->first == key) {
        cache.splice(cache.begin(), cache, it);
        return cache.front().second;
      }
  }
  MatD m = readNpyMatrix<double>(path);
  std::lock_guard<std::mutex> lock(mutex);
  cache.emplace_front(key, m);
  if (cache.size() > kFilesKept) cache.pop_back();
  return m;
}

}  // namespace tl
