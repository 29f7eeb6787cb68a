#pragma once
// Runs scripts/reference/bench_reference.py (the PyTorch reference formulation) for `tlens bench`, so the
// C++ and reference timings are taken on one machine in one invocation.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tl::cli {

struct ReferenceBenchRequest {
  std::vector<std::string> ops;  // resolved operator strings ("sinkhorn:T=10,eps=1,mask_mode=subsequence")
  std::vector<int> sizes;
  int d = 64, repeats = 7, threads = 1;
  std::string precision = "f64";
  bool lazy = false;  // time O = A·V only (Operator::applyLazy and the structured PyTorch formulations)
};

struct ReferenceTimings {
  bool available = false;
  std::string reason;                          // why not, when unavailable (e.g. "No module named 'torch'")
  nlohmann::json report = nlohmann::json::object();  // bench_reference.py's JSON, as printed

  std::optional<double> medianSeconds(const std::string& op, int n) const;
  // Why the script could not time this row although it ran (e.g. a parameter its formulation lacks).
  std::optional<std::string> rowError(const std::string& op, int n) const;
};

// $TL_REFERENCE_DIR/<name>, else <source tree>/scripts/reference/<name> (e.g. "bench_reference.py").
std::string referenceScript(const std::string& name);
// Interpreter: $TL_PYTHON, else /usr/bin/python3 (Debian's python3-torch).
std::string referencePython();

// Runs `command` through the shell: exit status (-1 when it did not exit normally), stdout and stderr.
struct ProcessOutput {
  int status = -1;
  std::string out, err;
};
ProcessOutput runShell(const std::string& command);
std::string shellQuote(const std::string& s);

// The environment the reference runs in beyond this process's own: GLIBC_TUNABLES with glibc.malloc.hugetlb=1, so
// that glibc backs PyTorch's large tensors with transparent huge pages as the C++ side's n × n buffers are, and with
// keptBuffersTunables(), the settings keepFreedBuffers(Main) makes in this process, so that PyTorch reuses the pages of its freed tensors as the C++ side does (common/large_buffers.h: both
// sides then pay the same page faults), unless the user set GLIBC_TUNABLES (then the reference inherits that). As
// "NAME=value" words, "" when nothing is added; the bench JSON records it.
std::string referenceEnvironment();

// Runs referenceScript(name) with `arguments` (already shell-quoted) and reads the JSON it prints. Never throws for
// a missing interpreter, torch or script: it reports them in `reason`.
ReferenceTimings runReferenceScript(const std::string& name, const std::string& arguments);
ReferenceTimings runReferenceBench(const ReferenceBenchRequest& request);

}  // namespace tl::cli
