#include "cuda/attention_problem.h"
#include "cuda/banded_cuda.h"

#include <cmath>

#include "common/errors.h"
#include "cuda/sinkhorn_cuda.h"

namespace tl::cuda {
namespace {

void require(bool ok, const std::string& family, const std::string& message) {
  if (!ok) throw InvalidArgument(family + " (CUDA): " + message);
}

void requireFiniteArray(const void* data, ElementType type, long long rows, long long cols, int batch,
                        const char* name, const std::string& family) {
  const long long count = (long long)batch * rows * cols;
  for (long long idx = 0; idx < count; ++idx) {
    const float x = readElement(data, type, size_t(idx));
    if (!isFiniteF(x)) {
      const long long head = idx / (rows * cols), row = idx / cols % rows, col = idx % cols;
      throw InvalidArgument(family + " (CUDA): " + name + " contains a non-finite value (" + std::to_string(x) +
                            ") at head " + std::to_string(head) + ", row " + std::to_string(row) + ", column " +
                            std::to_string(col) + "; clean the input (NaN/Inf are not valid attention inputs)");
    }
  }
}

void requireLogMarginal(const std::vector<float>& logMarginal, int n, const char* name, const char* tokens,
                        const std::string& family) {
  require(int(logMarginal.size()) == n, family,
          std::string(name) + " has " + std::to_string(logMarginal.size()) + " entries but there are " +
              std::to_string(n) + " " + tokens);
  bool anyActive = false;
  for (int i = 0; i < n; ++i) {
    const float x = logMarginal[size_t(i)];
    require(!std::isnan(x) && x != INFINITY, family,
            std::string(name) + "[" + std::to_string(i) + "] = " + std::to_string(x) +
                " is not a log marginal (finite, or -inf for an inactive token)");
    anyActive = anyActive || std::isfinite(x);
  }
  require(anyActive, family, std::string("every ") + (tokens[0] == 'q' ? "query" : "key") +
                                 " is inactive (" + name + " is -inf everywhere); at least one must carry mass");
}

}  // namespace

void validateProblem(const AttentionProblem& p, const CudaOptions& options, const std::string& family) {
  require(p.batch >= 1 && p.batch <= 65535, family,
          "batch = " + std::to_string(p.batch) + " heads is not supported; expected 1 to 65535");
  require(p.nq >= 1 && p.nk >= 1, family,
          "empty problem (" + std::to_string(p.nq) + " queries, " + std::to_string(p.nk) + " keys)");
  require(p.nq <= (1 << 30) && p.nk <= (1 << 30), family, "more than 2^30 tokens are not supported");
  require(p.d >= 1 && p.d <= 65536, family, "head dimension d = " + std::to_string(p.d) + " is not in [1, 65536]");
  require(p.q != nullptr && p.k != nullptr, family, "q and k are required");
  require((p.v == nullptr) == (p.dv == 0), family,
          p.v ? "v is given but dv = 0" : "dv = " + std::to_string(p.dv) + " but v is missing");
  require(p.dv >= 0 && p.dv <= 65536, family, "value dimension dv = " + std::to_string(p.dv) + " is not in [0, 65536]");
  require(std::isfinite(p.scale) && p.scale > 0, family,
          "attention scale = " + std::to_string(p.scale) + " is not valid; expected a finite scale > 0");
  requireLogMarginal(p.logMu, p.nq, "logMu", "queries", family);
  requireLogMarginal(p.logNu, p.nk, "logNu", "keys", family);
  const bool tiles = options.tileRows != 0 || options.tileCols != 0;
  require(!tiles || (options.tileRows >= 1 && options.tileCols >= 1 && options.tileRows <= 16384 &&
                     options.tileCols <= 16384),
          family,
          "display tiles " + std::to_string(options.tileRows) + " × " + std::to_string(options.tileCols) +
              " are not valid; expected 1 to 16384 rows and columns (or 0 × 0 for none)");
}

void throwNonFinite(const AttentionProblem& p, const std::string& family) {
  requireFiniteArray(p.q, p.type, p.nq, p.d, p.batch, "q", family);
  requireFiniteArray(p.k, p.type, p.nk, p.d, p.batch, "k", family);
  if (p.v) requireFiniteArray(p.v, p.type, p.nk, p.dv, p.batch, "v", family);
  throw InvalidArgument(family + " (CUDA): the GPU found a NaN/Inf in q, k or v that the host does not see");
}

namespace {

// batch·n entries, each finite or −inf (an inactive token).
void checkDual(const std::string& family, const std::vector<float>& dual, long long batch, long long n,
               const char* name) {
  require((long long)dual.size() == batch * n, family,
          std::string(name) + " has " + std::to_string(dual.size()) + " entries; expected batch × " +
              std::to_string(n) + " = " + std::to_string(batch * n));
  for (size_t i = 0; i < dual.size(); ++i)
    require(isFiniteF(dual[i]) || dual[i] == -INFINITY, family,
            std::string(name) + "[" + std::to_string(i) + "] = " + std::to_string(dual[i]) +
                " is not a dual (finite, or -inf for an inactive token)");
}

}  // namespace

void validateSinkhornParams(const AttentionProblem& problem, const SinkhornCudaParams& params) {
  require(params.T >= 1, "Sinkhorn", "T = " + std::to_string(params.T) + " is not valid; expected T >= 1");
  require(std::isfinite(params.eps) && params.eps > 0, "Sinkhorn",
          "eps = " + std::to_string(params.eps) + " is not valid; expected eps > 0");
  if (!params.initialV.empty()) checkDual("Sinkhorn", params.initialV, problem.batch, problem.nk, "initial v");
}

void validateDuals(const AttentionProblem& p, const std::vector<float>& u, const std::vector<float>& v, double eps) {
  const std::string family = "plan from duals";
  require(std::isfinite(eps) && eps > 0, family, "eps = " + std::to_string(eps) + " is not valid; expected eps > 0");
  checkDual(family, u, p.batch, p.nq, "u");
  checkDual(family, v, p.batch, p.nk, "v");
}

void validateBandedParams(const BandedCudaParams& params, const CudaOptions& options) {
  const std::string family = "banded";
  require(params.W >= 0, family, "W = " + std::to_string(params.W) + " is not valid; expected W >= 0");
  require(params.baseSteps >= 0 && params.tailSteps >= 0 && params.baseSteps + params.tailSteps >= 1, family,
          "base_steps = " + std::to_string(params.baseSteps) + ", tail_steps = " + std::to_string(params.tailSteps) +
              " are not valid; expected both >= 0 and at least one step");
  require(std::isfinite(params.eps) && params.eps > 0, family,
          "eps = " + std::to_string(params.eps) + " is not valid; expected eps > 0");
  require(!options.plan && options.tileRows == 0 && options.tileCols == 0, family,
          "the loop returns no dense plan or display tiles; the band of scores comes from bandScoresCuda");
}

}  // namespace tl::cuda
