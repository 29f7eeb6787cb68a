#pragma once
// A file that says "a process is running here". The process holds an exclusive flock on it for its lifetime and
// removes it on a clean exit. The kernel releases the lock however the process ends (SIGKILL, a crash, a power
// cut), so a marker found unlocked at start is what a run that never reached its clean exit left behind; a
// locked one belongs to a process that is still running. flock, not a PID in the file: PIDs are reused.
#include <string>

namespace tl {

class RunMarker {
 public:
  // Creates `path` (its folder must exist) and tries to lock it. Throws FileError when it cannot be created.
  explicit RunMarker(std::string path);
  ~RunMarker();  // a clean exit: removes the marker if this process holds it
  RunMarker(const RunMarker&) = delete;
  RunMarker& operator=(const RunMarker&) = delete;

  // False: another live process holds the marker, and this one must leave what it guards alone.
  bool held() const { return fd_ >= 0; }
  // The marker was there, unlocked, before this process took it: the previous run ended without a clean exit.
  bool previousRunEndedUncleanly() const { return previousRunEndedUncleanly_; }

 private:
  std::string path_;
  int fd_ = -1;
  bool previousRunEndedUncleanly_ = false;
};

}  // namespace tl
