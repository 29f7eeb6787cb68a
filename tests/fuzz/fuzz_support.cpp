#include "fuzz_support.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace tl::fuzz {

const std::string& writeScratchFile(const std::string& bytes, const char* suffix) {
  namespace fs = std::filesystem;
  static const fs::path folder = fs::is_directory("/dev/shm") ? fs::path("/dev/shm") : fs::temp_directory_path();
  // The suffix is part of the name because some readers choose their format by it.
  static std::string path;
  if (path.empty()) std::atexit([] { std::remove(path.c_str()); });
  path = (folder / ("tl-fuzz-" + std::to_string(getpid()) + suffix)).string();
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(bytes.data(), std::streamsize(bytes.size()));
  return path;
}

}  // namespace tl::fuzz
