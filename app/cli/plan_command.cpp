// `tlens plan`: one operator on one input; writes the plan, duals, output, extras and metrics.json.
#include <chrono>
#include <iostream>

#include "arguments.h"
#include "commands.h"
#include "common/errors.h"
#include "io/atomic_file.h"
#include "io/npy.h"
#include "plan_metrics.h"
#include "session/engine.h"

namespace tl::cli {
namespace {

CommandLine planCommandLine() {
  return CommandLine(
      "plan", "Compute one operator's attention plan, final duals, output and metrics for one input.",
      {{"q", "Q.npy", "queries, n_q x d (float32/float64 .npy)"},
       {"k", "K.npy", "keys, n_k x d"},
       {"v", "V.npy", "values, n_k x d_v (optional; output.npy is written when given)"},
       {"mask", "M.npy", "padding mask, length n: 1 = valid token, 0 = padding (optional)"},
       {"source", "SPEC", "synthetic input instead of files, e.g. \"synthetic:gaussian:n=256,d=64,seed=0\""},
       {"op", "SPEC", "operator, e.g. \"sinkhorn:T=10,eps=0.5\" (see the list below)"},
       {"precision", "f64|f32", "computation precision; files are written in it (default f64)"},
       {"out", "DIR", "output folder (created if missing)"},
       {"json", "", "print metrics.json to stdout instead of a summary line"}});
}

SourceSpec sourceFrom(const CommandLine& cl) {
  const bool fromFiles = cl.has("q") || cl.has("k") || cl.has("v") || cl.has("mask");
  if (cl.has("source")) {
    if (fromFiles) throw InvalidArgument("give either --source or --q/--k files, not both");
    return SourceSpec::parse(cl.required("source"));
  }
  if (!cl.has("q") || !cl.has("k")) throw InvalidArgument("'plan' needs --q and --k, or --source");
  SourceSpec spec;
  spec.kind = SourceSpec::Kind::Files;
  spec.q = cl.required("q");
  spec.k = cl.required("k");
  spec.v = cl.get("v").value_or("");
  spec.mask = cl.get("mask").value_or("");
  return spec;
}

// Every array goes out in the precision it was computed in (the result is widened to double for analysis;
// narrowing back is exact).
template <class T>
std::vector<std::string> writeArrays(const std::string& dir, const PlanResult<double>& wide) {
  const PlanResult<T> result = wide.template cast<T>();
  std::vector<std::string> written;
  auto put = [&](const std::string& name, const auto& array) {
    writeNpy(dir + "/" + name + ".npy", array);
    written.push_back(name + ".npy");
  };
  put("plan", result.plan);
  if (result.u.size() > 0) put("u", result.u);
  if (result.v.size() > 0) put("v", result.v);
  if (result.output) put("output", *result.output);
  for (const auto& [name, array] : result.extras) put(name, array);
  return written;
}

}  // namespace

int planCommand(const Args& args) {
  CommandLine cl = planCommandLine();
  cl.parse(args);
  if (cl.helpRequested()) {
    std::cout << cl.usage() << "\n" << operatorsHelp() << "\n" << sourcesHelp();
    return 0;
  }
  const auto start = std::chrono::steady_clock::now();
  PlanRunInfo info;
  info.op = OperatorRegistry::builtin().parse(cl.required("op"));
  info.precision = parsePrecision(cl.get("precision").value_or("f64"));
  info.source = sourceFrom(cl);
  const std::string outDir = cl.required("out");

  const AttentionInput<double> input = loadSource(info.source);
  info.nQueries = input.nQueries();
  info.nKeys = input.nKeys();
  info.headDim = input.headDim();
  const PlanResult<double> result = runOperator(info.op, input, info.precision);

  ensureDirectory(outDir);
  const auto written = info.precision == Precision::F64 ? writeArrays<double>(outDir, result)
                                                        : writeArrays<float>(outDir, result);
  info.wallSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  nlohmann::json metrics = planMetrics(info, result);
  metrics["files"] = written;
  writeFileAtomically(outDir + "/metrics.json", metrics.dump(2) + "\n");

  if (cl.has("json")) {
    std::cout << metrics.dump(2) << "\n";
  } else {
    std::cout << info.op.toString() << " on " << info.nQueries << "x" << info.nKeys << " (d=" << info.headDim
              << ", " << precisionName(info.precision) << "): row error " << result.errors.rowMax
              << ", column error " << result.errors.colMax << ", " << result.seconds << " s; wrote "
              << written.size() + 1 << " files to " << outDir << "\n";
  }
  return 0;
}

}  // namespace tl::cli
