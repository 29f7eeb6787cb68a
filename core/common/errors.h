#pragma once
// Failures carry a message a user can act on: what went wrong, which file or parameter, what to do.
// app/ maps them to exit codes (CLI) or dialogs (GUI); core never prints.
#include <stdexcept>
#include <string>

namespace tl {

struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The request itself is wrong: unknown parameter, value out of range, shape mismatch, NaN/Inf in the
// inputs. The CLI exits with 2 (usage) for these.
struct InvalidArgument : Error {
  using Error::Error;
};

// A file could not be read or written, or its content is corrupt. The CLI exits with 1.
struct FileError : Error {
  using Error::Error;
};

// The computation cannot run here (e.g. it would need more memory than allowed). The CLI exits with 1.
struct ResourceError : Error {
  using Error::Error;
};

// Thrown by Feedback::throwIfCanceled when a newer request superseded this one, or the user cancelled.
struct Canceled : Error {
  Canceled() : Error("canceled") {}
};

}  // namespace tl
