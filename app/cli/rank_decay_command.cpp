// `tlens rank-decay paths|outputs`: rank collapse along attention paths (σ₂/σ₁ per depth) or of the layer
// outputs (ρ_out per layer) for one or more operators on a synthetic stack, App. G random matrices or a
// checkpoint (docs/cli.md#rank-decay). The computing is core/rankdecay; figures go through the GUI's
// Rank decay view (rank_decay_figures.cpp), only in builds with the GUI.
#include <iostream>

#include "arguments.h"
#include "commands.h"
#include "common/errors.h"
#include "io/atomic_file.h"
#include "rankdecay/experiment.h"
#include "rankdecay/result_json.h"
#include "rank_decay_figures.h"
#include "terminal_progress.h"

namespace tl::cli {
namespace {

CommandLine rankDecayCommandLine() {
  return CommandLine(
      "rank-decay",
      "Rank collapse of attention: 'paths' samples products of attention matrices from distinct layers and "
      "reports sigma2/sigma1 per depth; 'outputs' reports ||res(X)||/||X|| per layer, with the theory curves "
      "where they apply.",
      {{"source", "SRC", "stack:n=32,d=64,H=4,L=12,scale=1,ln=none | random:n=50,s=1,L=24[,skip=1] | "
                         "model:checkpoint=DIR,images=fashion-mnist:test:0-99"},
       {"op", "OPSPEC", "attention normaliser, e.g. softmax, sinkhorn:T=50, esp, lot:r=8 ('trained' keeps a "
                        "checkpoint's own); repeat to compare",
        true},
       {"config", "CONFIG", "san (default), san+skip, san+ffn or transformer"},
       {"paths", "N", "paths sampled per depth (default 100)"},
       {"seeds", "N", "stack: networks, each with fresh weights and input from seed S+k (default 20)"},
       {"order", "ORDER", "literal (default: P^l1 ... P^lt, the paper's) or network (P^lt ... P^l1)"},
       {"sample-per-layer", "", "paths: draw a sample per factor instead of one per path"},
       {"seed", "S", "seed of the path sampler and the first network (default 0)"},
       {"json", "FILE", "write the curves to FILE as JSON"},
       {"csv", "FILE", "also write the summary table to FILE as CSV"},
       {"png", "FILE", "also draw the figure as PNG (builds with the GUI)"},
       {"svg", "FILE", "also draw the figure as SVG"},
       {"pdf", "FILE", "also draw the figure as PDF"}},
      {{"MEASURE", "paths or outputs"}});
}

rankdecay::ProductOrder orderFrom(const std::string& text) {
  if (text == "literal") return rankdecay::ProductOrder::Literal;
  if (text == "network") return rankdecay::ProductOrder::Network;
  throw InvalidArgument("--order: '" + text + "' is not an order; expected literal or network");
}

rankdecay::RankDecayRequest requestFrom(const CommandLine& cl) {
  const std::string measure = cl.positionals().at(0);
  if (measure != "paths" && measure != "outputs")
    throw InvalidArgument("rank-decay: unknown measure '" + measure + "'; expected paths or outputs");
  rankdecay::RankDecayRequest request;
  request.wantPaths = measure == "paths";
  request.wantOutputs = measure == "outputs";
  request.source = rankdecay::parseRankDecaySource(cl.required("source"));
  const std::vector<std::string> ops = cl.all("op");
  if (ops.empty()) throw InvalidArgument("rank-decay: give at least one --op, e.g. --op softmax --op sinkhorn:T=50");
  for (const std::string& op : ops)
    request.operators.push_back(op == rankdecay::kTrainedOperator ? OperatorSpec{op, {}}
                                                                  : OperatorRegistry::builtin().parse(op));
  request.config = rankdecay::parseConfig(cl.get("config").value_or("san"));
  if (const auto paths = cl.get("paths")) request.paths.paths = parsePositiveInt("--paths", *paths);
  if (const auto seeds = cl.get("seeds")) request.seeds = parsePositiveInt("--seeds", *seeds);
  request.paths.order = orderFrom(cl.get("order").value_or("literal"));
  request.paths.samplePerLayer = cl.has("sample-per-layer");
  if (const auto seed = cl.get("seed")) request.paths.seed = parseUnsigned("--seed", *seed);
  return request;
}

}  // namespace

int rankDecayCommand(const Args& args) {
  CommandLine cl = rankDecayCommandLine();
  cl.parse(args);
  if (cl.helpRequested()) {
    std::cout << cl.usage() << "\n" << rankdecay::describeRankDecaySources() << "\n" << operatorsHelp();
    return 0;
  }
  const rankdecay::RankDecayRequest request = requestFrom(cl);
  const std::string json = cl.required("json");
  const FigurePaths figures{cl.get("png"), cl.get("svg"), cl.get("pdf")};
  checkFiguresAvailable(figures);

  rankdecay::RankDecayResult result;
  {
    TerminalProgress progress;  // "<operator>: network 3/20" on a terminal; Ctrl-C cancels (exit 1)
    InterruptScope interrupts(progress.feedback());
    result = rankdecay::runRankDecay(request, progress.feedback());
  }
  writeFileAtomically(json, rankdecay::toJson(result).dump(2) + "\n");
  if (const auto csv = cl.get("csv"))
    writeFileAtomically(*csv, request.wantPaths ? rankdecay::pathsCsv(result) : rankdecay::outputsCsv(result));
  writeFigures(result, figures);
  std::cout << "wrote " << json << "\n";
  return 0;
}

}  // namespace tl::cli
