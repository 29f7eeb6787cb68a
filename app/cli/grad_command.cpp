// `tlens grad`: exact gradients of banded Sinkhorn attention (docs/cli.md#grad). The loss is
// L = Σ G_ij·O_ij with O the operator's output on V (the output.npy of `tlens plan` for the same arguments);
// writes dQ.npy, dK.npy, dV.npy and metrics.json.
#include <chrono>
#include <iostream>

#include <nlohmann/json.hpp>

#include "banded_options.h"
#include "commands.h"
#include "common/errors.h"
#include "input_options.h"
#include "io/atomic_file.h"
#include "io/npy.h"
#include "ops/banded/banded_gradients.h"
#include "session/session.h"

namespace tl::cli {
namespace {

CommandLine gradCommandLine() {
  std::vector<OptionSpec> options = bandedInputOptions(true);
  options.insert(options.end(),
                 {{"op", "SPEC", "banded operator, e.g. \"banded:W=16,base_steps=15,tail_steps=2,eps=1\""},
                  {"loss-weights", "G.npy", "G, n_q x d_v: the loss is L = sum_ij G_ij * O_ij"},
                  {"full", "", "differentiate through the base as well (full backpropagation; default: stopped base)"},
                  {"schedule", "one-reference|direct",
                   "how a two-step tail forms its plans (default one-reference; other depths use direct)"},
                  {"out", "DIR", "output folder (created if missing)"},
                  {"json", "", "print metrics.json to stdout instead of a summary line"}});
  return CommandLine("grad", "Exact gradients dQ, dK, dV of banded Sinkhorn attention for the loss sum(G * output).",
                     std::move(options));
}

BandedTailSchedule scheduleFrom(const CommandLine& cl) {
  const std::string s = cl.get("schedule").value_or("one-reference");
  if (s == "one-reference") return BandedTailSchedule::OneReference;
  if (s == "direct") return BandedTailSchedule::Direct;
  throw InvalidArgument("--schedule must be one-reference or direct (got '" + s + "')");
}

template <class T>
BandedGradients<double> run(const AttentionInput<double>& input, const BandedParams& p, const MatD& G,
                            const BandedGradientOptions& options, const std::string& dir) {
  const BandedGradients<T> g =
      bandedGradients(input.template cast<T>(), p, Mat<T>(G.template cast<T>()), options);
  writeNpy(dir + "/dQ.npy", g.dQ);
  writeNpy(dir + "/dK.npy", g.dK);
  writeNpy(dir + "/dV.npy", g.dV);
  return {g.output.template cast<double>(), g.dQ.template cast<double>(), g.dK.template cast<double>(),
          g.dV.template cast<double>(), g.forwardSeconds, g.backwardSeconds};
}

}  // namespace

int gradCommand(const Args& args) {
  CommandLine cl = gradCommandLine();
  cl.parse(args);
  if (cl.helpRequested()) {
    std::cout << cl.usage() << "\n" << sourcesHelp();
    return 0;
  }
  const auto start = std::chrono::steady_clock::now();
  const BandedParams params = bandedParamsFrom(cl);
  const Precision precision = precisionFrom(cl);
  BandedGradientOptions options;
  options.mode = cl.has("full") ? BandedGradientMode::Full : BandedGradientMode::Surrogate;
  options.schedule = scheduleFrom(cl);
  const std::string outDir = cl.required("out");
  const AttentionInput<double> input = bandedInputFrom(cl);
  if (!input.V) throw InvalidArgument("'grad' needs values: --v V.npy (or a source that has them)");
  const MatD G = lossWeightsFrom(cl);

  ensureDirectory(outDir);
  const BandedGradients<double> g = precision == Precision::F64 ? run<double>(input, params, G, options, outDir)
                                                                 : run<float>(input, params, G, options, outDir);
  const bool oneReference = options.mode == BandedGradientMode::Surrogate && params.tailSteps == 2 &&
                            options.schedule == BandedTailSchedule::OneReference;
  nlohmann::json metrics = {
      {"operator", cl.required("op")},
      {"mode", options.mode == BandedGradientMode::Full ? "full" : "surrogate"},
      {"schedule", oneReference ? "one-reference" : "direct"},
      {"precision", precisionName(precision)},
      {"n_q", input.nQueries()},
      {"n_k", input.nKeys()},
      {"d", input.headDim()},
      {"d_v", input.V->cols()},
      {"loss", (G.array() * g.output.array()).sum()},
      {"forward_seconds", g.forwardSeconds},
      {"backward_seconds", g.backwardSeconds},
      {"wall_seconds", std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()},
      {"files", {"dQ.npy", "dK.npy", "dV.npy"}}};
  writeFileAtomically(outDir + "/metrics.json", metrics.dump(2) + "\n");
  if (cl.has("json")) {
    std::cout << metrics.dump(2) << "\n";
  } else {
    std::cout << "banded gradients (" << metrics["mode"].get<std::string>() << ", "
              << metrics["schedule"].get<std::string>() << ", " << precisionName(precision) << ") on "
              << input.nQueries() << "x" << input.nKeys() << ": forward " << g.forwardSeconds << " s, backward "
              << g.backwardSeconds << " s; wrote dQ.npy, dK.npy, dV.npy, metrics.json to " << outDir << "\n";
  }
  return 0;
}

}  // namespace tl::cli
