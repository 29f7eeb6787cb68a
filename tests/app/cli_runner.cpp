#include "cli_runner.h"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>

namespace tl::testing {
namespace {

std::string shellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += (c == '\'') ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// The scratch folders of this test program: removed at the end when every test passed, kept for a look
// when one failed.
class ScratchFolders : public ::testing::Environment {
 public:
  void add(const std::filesystem::path& dir) {
    std::lock_guard<std::mutex> lock(mutex_);
    dirs_.push_back(dir);
  }
  void TearDown() override {
    if (!::testing::UnitTest::GetInstance()->Passed()) return;
    std::error_code ignored;
    for (const auto& dir : dirs_) std::filesystem::remove_all(dir, ignored);
  }

 private:
  std::mutex mutex_;
  std::vector<std::filesystem::path> dirs_;
};

ScratchFolders& scratchFolders() {
  // gtest owns and deletes a registered environment.
  static ScratchFolders* folders =
      static_cast<ScratchFolders*>(::testing::AddGlobalTestEnvironment(new ScratchFolders));
  return *folders;
}

}  // namespace

std::string scratchDir(const std::string& name) {
  static std::atomic<int> counter{0};
  const auto dir = std::filesystem::path(::testing::TempDir()) /
                   ("tlens-" + std::to_string(::getpid()) + "-" + std::to_string(counter++) + "-" + name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  scratchFolders().add(dir);
  return dir.string();
}

CliRun runTlens(const std::vector<std::string>& args, const std::string& env) {
  return runProgram(TL_TLENS_PATH, args, env);
}

CliRun runProgram(const std::string& program, const std::vector<std::string>& args, const std::string& env) {
  const std::string dir = scratchDir("run");
  std::string command = env.empty() ? "" : env + " ";
  command += shellQuote(program);
  for (const auto& a : args) command += " " + shellQuote(a);
  command += " >" + shellQuote(dir + "/out") + " 2>" + shellQuote(dir + "/err");
  const int status = std::system(command.c_str());
  CliRun run;
  run.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  run.out = readText(dir + "/out");
  run.err = readText(dir + "/err");
  std::filesystem::remove_all(dir);
  return run;
}

bool fileExists(const std::string& path) { return std::filesystem::is_regular_file(path); }

std::string readText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void writeText(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

int lineCount(const std::string& text) {
  int lines = 0;
  for (size_t i = 0; i < text.size(); ++i)
    if (text[i] == '\n' || i + 1 == text.size()) ++lines;
  return lines;
}

::testing::AssertionResult failsWithOneErrorLine(const CliRun& run, int status,
                                                 const std::vector<std::string>& mentions) {
  if (run.status != status)
    return ::testing::AssertionFailure() << "exit status " << run.status << ", expected " << status
                                         << "; stderr: " << run.err;
  if (run.err.rfind("tlens: error: ", 0) != 0 || lineCount(run.err) != 1)
    return ::testing::AssertionFailure() << "stderr is not one 'tlens: error: ' line: " << run.err;
  for (const auto& needle : mentions)
    if (run.err.find(needle) == std::string::npos)
      return ::testing::AssertionFailure() << "stderr does not mention '" << needle << "': " << run.err;
  return ::testing::AssertionSuccess() << run.err;
}

bool familyListed(const std::string& family) {
  const std::string help = runTlens({"--help"}).out;
  return help.find("\n  " + family + "  ") != std::string::npos;
}

}  // namespace tl::testing
