// `tlens plan`: one operator on one input; writes the plan, duals, output, extras and metrics.json.
#include <chrono>
#include <iostream>

#include "arguments.h"
#include "commands.h"
#include "common/errors.h"
#include "input_options.h"
#include "io/atomic_file.h"
#include "io/npy.h"
#include "ops/transport_plan.h"
#include "plan_metrics.h"
#include "session/backend_choice.h"
#include "session/engine.h"

namespace tl::cli {
namespace {

CommandLine planCommandLine() {
  std::vector<OptionSpec> options = inputOptions();
  options.insert(options.end(),
                 {{"op", "SPEC", "operator, e.g. \"sinkhorn:T=10,eps=0.5\" (see the list below)"},
                  {"out", "DIR", "output folder (created if missing)"},
                  {"no-plan", "",
                   "write no plan.npy and skip the analyses that need the whole plan (row entropy, rank): for plans "
                   "too large to form, e.g. hard ESP, LOT or banded Sinkhorn at tens of thousands of tokens"},
                  {"json", "", "print metrics.json to stdout instead of a summary line"}});
  return CommandLine("plan", "Compute one operator's attention plan, final duals, output and metrics for one input.",
                     std::move(options));
}

// Every array goes out in the precision it was computed in (the result is widened to double for analysis;
// narrowing back is exact).
template <class T>
std::vector<std::string> writeArrays(const std::string& dir, const PlanResult<double>& wide, bool withPlan) {
  const PlanResult<T> result = wide.template cast<T>();
  std::vector<std::string> written;
  auto put = [&](const std::string& name, const auto& array) {
    writeNpy(dir + "/" + name + ".npy", array);
    written.push_back(name + ".npy");
  };
  if (withPlan) put("plan", result.plan.dense());
  if (result.u.size() > 0) put("u", result.u);
  if (result.v.size() > 0) put("v", result.v);
  if (result.output) put("output", *result.output);
  for (const auto& [name, array] : result.extras) put(name, array);
  return written;
}

// A plan beyond the dense cap would fail only when written, after the operator's work: refused before it, with
// the way round. (Estimated in the precision asked for; a CUDA run writes float32, half of a float64 estimate.)
void checkPlanFits(const PlanRunInfo& info) {
  const std::string overCap =
      densePlanOverCap(info.nQueries, info.nKeys, info.precision == Precision::F64 ? 8 : 4, "");
  if (!overCap.empty())
    throw ResourceError(overCap + "; add --no-plan to write the output (with --v), the duals, the extras and the "
                                  "marginal errors without it");
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
  info.precision = precisionFrom(cl);
  info.device = deviceFrom(cl);
  info.source = sourceFrom(cl);
  const std::string outDir = cl.required("out");

  const AttentionInput<double> input = loadSource(info.source).attention();
  info.nQueries = input.nQueries();
  info.nKeys = input.nKeys();
  info.headDim = input.headDim();
  info.withPlan = !cl.has("no-plan");
  if (info.withPlan) checkPlanFits(info);
  const PlanResult<double> result = runOperator(info.op, input, info.precision, info.device);
  // The GPU computes in float32, so its arrays are written as float32 whatever --precision says.
  const bool float64 = info.precision == Precision::F64 && result.backend == Backend::Cpu;

  ensureDirectory(outDir);
  const auto written = float64 ? writeArrays<double>(outDir, result, info.withPlan)
                               : writeArrays<float>(outDir, result, info.withPlan);
  info.wallSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  nlohmann::json metrics = planMetrics(info, result);
  metrics["files"] = written;
  writeFileAtomically(outDir + "/metrics.json", metrics.dump(2) + "\n");

  if (!result.backendNote.empty()) std::cerr << "tlens: note: " << result.backendNote << "\n";
  if (cl.has("json")) {
    std::cout << metrics.dump(2) << "\n";
  } else {
    std::cout << info.op.toString() << " on " << info.nQueries << "x" << info.nKeys << " (d=" << info.headDim
              << ", " << (float64 ? "f64" : "f32") << ", " << deviceLabel(result.backend)
              << "): row error " << result.errors.rowMax
              << ", column error " << result.errors.colMax << ", " << result.seconds << " s; wrote "
              << written.size() + 1 << " files to " << outDir << "\n";
  }
  return 0;
}

}  // namespace tl::cli
