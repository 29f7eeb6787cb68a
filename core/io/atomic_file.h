#pragma once
// Files are written to a temporary sibling and renamed into place, so an interrupted or failed write never
// leaves a half-written file and never destroys the previous version.
#include <string>

namespace tl {

// Throws FileError naming the path and the OS reason.
void writeFileAtomically(const std::string& path, const std::string& bytes);
std::string readFile(const std::string& path);  // throws FileError when missing/unreadable
void ensureDirectory(const std::string& path);   // creates parents; throws FileError

}  // namespace tl
