// The request checks of hard ESP on the GPU (esp_cuda.h), built with or without CUDA.
#include <string>

#include "common/errors.h"
#include "cuda/esp_cuda.h"

namespace tl::cuda {
namespace {

void requireHardEsp(bool ok, const std::string& message) {
  if (!ok) throw InvalidArgument("esp (CUDA): " + message);
}

}  // namespace

void validateEspProblem(const EspCudaProblem& p, const EspCudaOptions& options) {
  requireHardEsp(p.batch >= 1 && p.nq >= 1 && p.nk >= 1 && p.d >= 1 && p.L >= 1,
                 "empty problem (batch " + std::to_string(p.batch) + ", " + std::to_string(p.nq) + " queries, " +
                     std::to_string(p.nk) + " keys, d = " + std::to_string(p.d) + ", L = " + std::to_string(p.L) + ")");
  requireHardEsp(p.batch <= 65535,
                 "batch = " + std::to_string(p.batch) + " heads is more than one launch holds (65535)");
  requireHardEsp(p.L <= 65535,
                 "L = " + std::to_string(p.L) + " slices is more than one launch holds (65535); use fewer");
  const long long items = (long long)p.batch * p.L * (p.nq > p.nk ? p.nq : p.nk);
  requireHardEsp(items < (1LL << 31),
                 "batch · L · n = " + std::to_string(items) +
                     " projections exceed the sort's 2^31 entries; run fewer heads or slices at once");
  requireHardEsp(p.q && p.k && p.directions, "q, k and the slice directions are required");
  requireHardEsp((p.v == nullptr) == (p.dv == 0), p.v ? "v is given but dv = 0" : "dv > 0 but v is missing");
  requireHardEsp(!p.coupling.empty(), "the rank coupling is empty");
  requireHardEsp(bool(options.weights), "no slice-weight function given");
}

}  // namespace tl::cuda
