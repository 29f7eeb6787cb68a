#include "input_options.h"

#include "common/errors.h"

namespace tl::cli {

std::vector<OptionSpec> inputOptions() {
  return {{"q", "Q.npy", "queries, n_q x d (float32/float64 .npy)"},
          {"k", "K.npy", "keys, n_k x d"},
          {"v", "V.npy", "values, n_k x d_v (optional; outputs O = A V are computed when given)"},
          {"mask", "M.npy", "padding mask, length n: 1 = valid token, 0 = padding (optional)"},
          {"source", "SPEC", "synthetic input instead of files, e.g. \"synthetic:gaussian:n=256,d=64,seed=0\""},
          {"precision", "f64|f32", "computation precision (default f64); `plan` writes its arrays in it"},
          {"device", "cpu|cuda|auto",
           "where the operators run (default cpu): cuda = the GPU in float32 (families without CUDA kernels run on "
           "the CPU and say so); auto = cuda when a usable GPU exists"}};
}

SourceSpec sourceFrom(const CommandLine& cl) {
  const bool fromFiles = cl.has("q") || cl.has("k") || cl.has("v") || cl.has("mask");
  if (cl.has("source")) {
    if (fromFiles) throw InvalidArgument("give either --source or --q/--k files, not both");
    return SourceSpec::parse(cl.required("source"));
  }
  if (!cl.has("q") || !cl.has("k")) throw InvalidArgument("'" + cl.command() + "' needs --q and --k, or --source");
  SourceSpec spec;
  spec.kind = SourceSpec::Kind::Files;
  spec.q = cl.required("q");
  spec.k = cl.required("k");
  spec.v = cl.get("v").value_or("");
  spec.mask = cl.get("mask").value_or("");
  return spec;
}

Precision precisionFrom(const CommandLine& cl) { return parsePrecision(cl.get("precision").value_or("f64")); }

DeviceChoice deviceFrom(const CommandLine& cl) { return parseDeviceChoice(cl.get("device").value_or("cpu")); }

}  // namespace tl::cli
