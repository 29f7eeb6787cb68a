#pragma once
// Runs the real `tlens` binary (path from TL_TLENS_PATH, set by tests/app/CMakeLists.txt) and captures its
// exit status, stdout and stderr; plus a scratch folder per test.
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tl::testing {

struct CliRun {
  int status = -1;  // exit status; -1 when the process did not exit normally (a crash)
  std::string out, err;
};

// `env` is a shell prefix such as "TL_PYTHON=/bin/false" (empty for none).
CliRun runTlens(const std::vector<std::string>& args, const std::string& env = "");
// The same for another of the project's programs (e.g. transportlens), given its path.
CliRun runProgram(const std::string& program, const std::vector<std::string>& args, const std::string& env = "");

// A fresh empty folder under the test temp dir, unique per call.
std::string scratchDir(const std::string& name);

bool fileExists(const std::string& path);
std::string readText(const std::string& path);
void writeText(const std::string& path, const std::string& bytes);

// Number of lines in `text` (a trailing newline does not start a new line).
int lineCount(const std::string& text);

// The error contract of main.cpp: exit `status`, exactly one "tlens: error: ..." line on stderr, and that
// line mentions every needle (case-sensitive).
[[nodiscard]] ::testing::AssertionResult failsWithOneErrorLine(const CliRun& run, int status,
                                                               const std::vector<std::string>& mentions = {});

// Whether `tlens --help` lists the operator family (a line "  <family>  <description>").
bool familyListed(const std::string& family);

}  // namespace tl::testing
