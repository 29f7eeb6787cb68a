#pragma once
// What every fuzz target shares: the input as bytes or as a file, and the rule that a reader may reject any input
// only with the project's own errors (common/errors.h: a message a user can act on). Any other exception
// (std::bad_alloc from an allocation the file cannot justify, std::out_of_range, a JSON library exception that
// escaped) aborts, so libFuzzer records the input as a crash; so do the sanitizers' reports.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "common/errors.h"

namespace tl::fuzz {

inline std::string bytesOf(const uint8_t* data, size_t size) { return std::string(reinterpret_cast<const char*>(data), size); }

// Readers whose public entry point takes a path get the input through this file: one per process, overwritten by
// every input, in memory (/dev/shm) where the machine has it.
const std::string& writeScratchFile(const std::string& bytes, const char* suffix);

template <class Body>
void rejectOnlyWithProjectErrors(Body&& body) {
  try {
    body();
  } catch (const Error&) {
    // The documented outcome for a bad file or spec.
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz: an exception that is not a tl::Error escaped: %s\n", e.what());
    std::abort();
  }
}

}  // namespace tl::fuzz
