#pragma once
// Arrays named by operator parameters (ESP and ASAP slice banks, ASAP's beta and dual, LOT's pivots and mass
// logits) are read once per distinct file. The GUI rebuilds an operator on every slider tick; without this
// each tick would read and parse the same files again. A file is the same while its path, size and
// modification time are, so an edited file is read afresh. Thread-safe (the Engine's worker and the CLI).
#include <string>

#include "common/matrix.h"

namespace tl {

// Path, size and modification time: what identifies a file's content for these caches; empty for an
// unreadable file (never cached).
std::string fileKey(const std::string& path);

// readNpyMatrix<double>(path) (io/npy.h), through the cache: the same FileError for unreadable files.
MatD readNpyMatrixCached(const std::string& path);

}  // namespace tl
