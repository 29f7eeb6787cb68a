#include "reference_bench.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

#include "common/large_buffers.h"

namespace tl::cli {
namespace {

std::string joinSizes(const std::vector<int>& sizes) {
  std::string out;
  for (int n : sizes) out += (out.empty() ? "" : ",") + std::to_string(n);
  return out;
}

// The last non-empty line of the script's stderr says why it failed (a Python traceback ends with it).
std::string lastLine(const std::string& text) {
  std::istringstream in(text);
  std::string line, last;
  while (std::getline(in, line))
    if (!line.empty()) last = line;
  return last;
}

}  // namespace

std::string shellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += (c == '\'') ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

ProcessOutput runShell(const std::string& command) {
  char errPath[] = "/tmp/tlens-bench-XXXXXX";
  const int fd = mkstemp(errPath);
  ProcessOutput result;
  if (fd < 0) return result;
  close(fd);
  if (FILE* pipe = popen((command + " 2>" + shellQuote(errPath)).c_str(), "r")) {
    char buffer[4096];
    size_t got;
    while ((got = fread(buffer, 1, sizeof buffer, pipe)) > 0) result.out.append(buffer, got);
    const int status = pclose(pipe);
    result.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  std::ifstream err(errPath);
  result.err.assign(std::istreambuf_iterator<char>(err), std::istreambuf_iterator<char>());
  std::remove(errPath);
  return result;
}

std::string referenceScript(const std::string& name) {
  if (const char* dir = std::getenv("TL_REFERENCE_DIR")) return std::string(dir) + "/" + name;
  return std::string(TL_SOURCE_DIR) + "/scripts/reference/" + name;
}

std::string referencePython() {
  const char* python = std::getenv("TL_PYTHON");
  return python ? python : "/usr/bin/python3";
}

std::string referenceEnvironment() {
  return std::getenv("GLIBC_TUNABLES") ? "" : "GLIBC_TUNABLES=glibc.malloc.hugetlb=1:" + keptBuffersTunables();
}

std::optional<double> ReferenceTimings::medianSeconds(const std::string& op, int n) const {
  if (!available) return std::nullopt;
  for (const auto& entry : report.value("results", nlohmann::json::array()))
    if (entry.value("op", "") == op && entry.value("n", 0) == n && entry.contains("median_seconds"))
      return entry["median_seconds"].get<double>();
  return std::nullopt;
}

std::optional<std::string> ReferenceTimings::rowError(const std::string& op, int n) const {
  if (!available) return std::nullopt;
  for (const auto& entry : report.value("results", nlohmann::json::array()))
    if (entry.value("op", "") == op && entry.value("n", 0) == n && entry.contains("error"))
      return entry["error"].get<std::string>();
  return std::nullopt;
}

ReferenceTimings runReferenceScript(const std::string& name, const std::string& arguments) {
  ReferenceTimings timings;
  const std::string script = referenceScript(name);
  if (!std::ifstream(script)) {
    timings.reason = "reference script not found at " + script + " (set TL_REFERENCE_DIR)";
    return timings;
  }
  const std::string environment = referenceEnvironment();
  const ProcessOutput run = runShell((environment.empty() ? "" : "env " + environment + " ") +
                                     shellQuote(referencePython()) + " " + shellQuote(script) + " " + arguments);
  if (run.status != 0) {
    const std::string why = lastLine(run.err);
    timings.reason = referencePython() + " " + script + " failed" + (why.empty() ? "" : ": " + why) +
                     (why.find("torch") != std::string::npos ? " (install python3-torch)" : "");
    return timings;
  }
  try {
    timings.report = nlohmann::json::parse(run.out);
    timings.available = true;
  } catch (const nlohmann::json::exception&) {
    timings.reason = "could not read the reference's JSON output";
  }
  return timings;
}

ReferenceTimings runReferenceBench(const ReferenceBenchRequest& request) {
  std::string arguments;
  for (const auto& op : request.ops) arguments += "--op " + shellQuote(op) + " ";
  arguments += "--n " + joinSizes(request.sizes) + " --d " + std::to_string(request.d) + " --repeats " +
               std::to_string(request.repeats) + " --threads " + std::to_string(request.threads) + " --precision " +
               request.precision + (request.lazy ? " --lazy" : "");
  return runReferenceScript("bench_reference.py", arguments);
}

}  // namespace tl::cli
