// The checks of a soft ESP request (esp_soft_cuda.h), before anything is uploaded.
#include <algorithm>
#include <cmath>
#include <string>

#include "common/errors.h"
#include "cuda/esp_soft_bands.h"
#include "cuda/esp_soft_cuda.h"

namespace tl::cuda {
namespace {

void requireSoftEsp(bool ok, const std::string& message) {
  if (!ok) throw InvalidArgument("esp soft (CUDA): " + message);
}

void requireSortedSide(const std::vector<float>& sorted, const std::vector<int>& tokens, int slices, int valid, int n,
                       const char* side) {
  requireSoftEsp(sorted.size() == size_t(slices) * size_t(valid) && tokens.size() == sorted.size(),
                 std::string(side) + ": expected " + std::to_string(slices) + " × " + std::to_string(valid) +
                     " sorted projections and tokens");
  for (size_t i = 0; i < sorted.size(); ++i) {
    requireSoftEsp(std::isfinite(sorted[i]), std::string(side) + ": a projection is not finite; clean the input");
    requireSoftEsp(i % size_t(valid) == 0 || sorted[i - 1] <= sorted[i],
                   std::string(side) + ": the projections of a slice must be in ascending order");
    requireSoftEsp(tokens[i] >= 0 && tokens[i] < n, std::string(side) + ": a sorted token is out of range");
  }
}

}  // namespace

void validateEspSoftProblem(const EspSoftProblem& p) {
  requireSoftEsp(p.nq >= 1 && p.nk >= 1 && p.d >= 1 && p.slices >= 1, "needs tokens, a head dimension and slices");
  requireSoftEsp(p.q && p.k, "q and k are required");
  requireSoftEsp(!p.v || p.dv >= 1, "v needs at least one column");
  requireSoftEsp(p.validQ >= 1 && p.validQ <= p.nq && p.validK >= 1 && p.validK <= p.nk,
                 "the valid tokens must be between 1 and the number of tokens");
  // The launch grid's y runs over key tiles (at most 65535 on CUDA).
  requireSoftEsp(p.validK <= 65535LL * kEspTile, "at most " + std::to_string(65535LL * kEspTile) + " keys");
  requireSortedSide(p.sortedQ, p.tokenQ, p.slices, p.validQ, p.nq, "queries");
  requireSortedSide(p.sortedK, p.tokenK, p.slices, p.validK, p.nk, "keys");
  const size_t entries = p.couplingRank.size();
  requireSoftEsp(entries >= 1 && p.couplingKeyRank.size() == entries && p.couplingMass.size() == entries,
                 "the rank coupling needs matching rank, key rank and mass arrays");
  for (size_t e = 0; e < entries; ++e) {
    requireSoftEsp(p.couplingRank[e] >= 0 && p.couplingRank[e] < p.validQ && p.couplingKeyRank[e] >= 0 &&
                       p.couplingKeyRank[e] < p.validK,
                   "a rank coupling entry is out of range");
    requireSoftEsp(e == 0 || p.couplingRank[e - 1] <= p.couplingRank[e],
                   "the rank coupling must be ordered by query rank");
  }
  requireSoftEsp(std::isfinite(p.sortTemp) && p.sortTemp > 0, "sort_temp must be finite and > 0 in float32");
  requireSoftEsp(p.reach >= 0 && !std::isnan(p.reach), "the band reach must be >= 0");
  requireSoftEsp(std::isfinite(p.p) && p.p > 0, "p must be finite and > 0");
}

}  // namespace tl::cuda
