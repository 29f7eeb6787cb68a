// `tlens eval`: a checkpoint's accuracy on a Fashion-MNIST split and, with --swap, the papers'
// plug-and-play experiment (core/model/swap_evaluation.h computes every number); this file parses the
// flags, prints the table and writes the JSON report.
#include <iomanip>
#include <iostream>

#include <nlohmann/json.hpp>

#include "arguments.h"
#include "commands.h"
#include "common/errors.h"
#include "io/atomic_file.h"
#include "model/swap_evaluation.h"
#include "model_options.h"
#include "terminal_progress.h"

namespace tl::cli {
namespace {

CommandLine evalCommandLine() {
  std::vector<OptionSpec> options = checkpointOptions();
  options.insert(options.end(),
                 {{"swap", "SPEC", "operator to put in place of the model's normaliser, e.g. \"sinkhorn:T=5,eps=1\""},
                  {"layers", "LIST", "layers that get the swap: comma-separated indices from 0, or all (default)"},
                  {"split", "test|train", "Fashion-MNIST split (default test)"},
                  {"limit", "N", "evaluate only the first N images of the split"},
                  {"json", "FILE", "also write every number to FILE as JSON"}});
  return CommandLine("eval",
                     "Accuracy of a ViT checkpoint on Fashion-MNIST; with --swap, accuracy with another attention "
                     "operator, agreement with the original predictions, per-layer output RMSE and attention distance.",
                     std::move(options), {{"CKPT", "checkpoint folder or weights file"}});
}

}  // namespace

int evalCommand(const Args& args) {
  CommandLine cl = evalCommandLine();
  cl.parse(args);
  if (cl.helpRequested()) {
    std::cout << cl.usage();
    return 0;
  }
  if (cl.positionals().size() != 1) throw InvalidArgument("eval: give one checkpoint (see tlens eval --help)");
  const std::string checkpoint = cl.positionals().front();
  SwapEvaluationOptions options;
  options.split = splitFrom(cl);
  options.limit = cl.has("limit") ? parsePositiveInt("--limit", *cl.get("limit")) : 0;  // 0: the whole split
  const VitRunner runner = VitRunner::open(checkpoint, importOptionsFrom(cl));
  if (cl.has("swap")) {
    options.swap = OperatorRegistry::builtin().parse(*cl.get("swap"));
    options.layers = parseLayers(cl.get("layers").value_or("all"), runner.config().numLayers);
  } else if (cl.has("layers")) {
    throw InvalidArgument("--layers chooses where --swap goes; give --swap too");
  }

  SwapEvaluation r;
  {
    TerminalProgress progress;  // "image i/N" on a terminal; Ctrl-C cancels (exit 1, "canceled")
    InterruptScope interrupts(progress.feedback());
    r = evaluateSwap(runner, options, progress.feedback());
  }
  const int count = r.images;
  const double seconds = r.seconds;
  nlohmann::json report = {{"checkpoint", checkpoint},
                           {"split", options.split == FashionMnistPart::Train ? "train" : "test"},
                           {"images", count},
                           {"operator", r.op},
                           {"accuracy", double(r.correct) / count},
                           {"seconds", seconds},
                           {"images_per_second", count / seconds}};
  std::cout << std::fixed << std::setprecision(2) << checkpoint << " (" << r.op << "): "
            << 100.0 * r.correct / count << "% of " << count << " " << report["split"].get<std::string>()
            << " images, " << std::setprecision(1) << count / seconds << " images/s\n";
  if (r.swap) {
    report["swap"] = r.swap->toString();
    report["swapped_layers"] = r.swappedLayers;
    report["swapped_accuracy"] = double(r.swappedCorrect) / count;
    report["agreement"] = double(r.agreeing) / count;
    std::cout << std::setprecision(2) << "with " << r.swap->toString() << " at " << r.swappedLayers.size()
              << " layer(s): " << 100.0 * r.swappedCorrect / count << "%, agreement with the original predictions "
              << 100.0 * r.agreeing / count << "%\n  layer  output RMSE  attention distance (rel. Frobenius)\n";
    nlohmann::json perLayer = nlohmann::json::array();
    for (const LayerShift& shift : r.layers) {
      perLayer.push_back({{"layer", shift.layer}, {"swapped", shift.swapped}, {"output_rmse", shift.outputRmse},
                          {"attention_distance", shift.attentionDistance}});
      std::cout << std::setw(7) << shift.layer << (shift.swapped ? "*" : " ") << std::scientific
                << std::setprecision(3) << std::setw(12) << shift.outputRmse << std::setw(20)
                << shift.attentionDistance << std::fixed << "\n";
    }
    std::cout << "  (* swapped layers; layers after the first swap change through their inputs)\n";
    report["layers"] = perLayer;
  }
  if (const auto json = cl.get("json")) writeFileAtomically(*json, report.dump(2) + "\n");
  return 0;
}

}  // namespace tl::cli
