// `tlens eval`: a checkpoint's accuracy on a Fashion-MNIST split and, with --swap, the papers'
// plug-and-play experiment: the same trained weights with another normaliser (a core registry operator,
// CPU, double) at chosen layers: swapped accuracy, agreement with the model's own predictions, and per
// layer how far the block outputs and the attention plans move.
#include <chrono>
#include <cmath>
#include <iomanip>
#include <iostream>

#include <nlohmann/json.hpp>
#include <map>
#include <sstream>

#include "arguments.h"
#include "commands.h"
#include "common/errors.h"
#include "io/atomic_file.h"
#include "model/vit_inference.h"
#include "model_options.h"

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

std::vector<int> parseLayers(const std::string& text, int numLayers) {
  std::vector<int> layers;
  if (text == "all") {
    for (int l = 0; l < numLayers; ++l) layers.push_back(l);
    return layers;
  }
  std::stringstream list(text);
  for (std::string item; std::getline(list, item, ',');) {
    if (item.empty() || item.size() > 4 || item.find_first_not_of("0123456789") != std::string::npos ||
        std::stoi(item) >= numLayers)
      throw InvalidArgument("--layers: '" + item + "' is not a layer of this model; expected indices 0.." +
                            std::to_string(numLayers - 1) + " or all");
    layers.push_back(std::stoi(item));
  }
  if (layers.empty()) throw InvalidArgument("--layers: give at least one layer index, or all");
  return layers;
}

double rms(const MatD& m) { return m.size() ? std::sqrt(m.squaredNorm() / double(m.size())) : 0.0; }

struct LayerShift {
  double outputRmse = 0;        // mean over images of RMS(swapped block output − original)
  double attentionDistance = 0; // mean over images and heads of ‖A' − A‖_F / ‖A‖_F
};

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
  const FashionMnistPart part = splitFrom(cl);
  const int limit = cl.has("limit") ? parsePositiveInt("--limit", *cl.get("limit")) : 0;  // 0: the whole split
  const VitRunner runner = VitRunner::open(checkpoint, importOptionsFrom(cl));
  const VitConfig& config = runner.config();
  std::optional<OperatorSpec> swap;
  std::map<int, OperatorSpec> swaps;
  if (cl.has("swap")) {
    swap = OperatorRegistry::builtin().parse(*cl.get("swap"));
    for (int l : parseLayers(cl.get("layers").value_or("all"), config.numLayers)) swaps[l] = *swap;
  } else if (cl.has("layers")) {
    throw InvalidArgument("--layers chooses where --swap goes; give --swap too");
  }

  const FashionMnistSplit& split = loadFashionMnist(part);  // the split's images, read once
  const int count = limit > 0 ? std::min(limit, split.count) : split.count;
  const size_t pixels = size_t(FashionMnistSplit::kRows) * FashionMnistSplit::kCols;
  int correct = 0, swappedCorrect = 0, agree = 0;
  std::vector<LayerShift> shifts(size_t(config.numLayers));
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < count; ++i) {
    const int label = split.labels[size_t(i)];
    const ModelImage image = modelImageFromGrey(split.images.data() + size_t(i) * pixels, config, "", label);
    if (!swap) {
      const VecD logits = runner.logits(image.pixels);
      Eigen::Index predicted;
      logits.maxCoeff(&predicted);
      correct += int(predicted) == label;
    } else {
      const VitTrace original = runner.run(image.pixels);
      const VitTrace swapped = runner.rerun(original, swaps.begin()->first, swaps);
      correct += original.predicted() == label;
      swappedCorrect += swapped.predicted() == label;
      agree += swapped.predicted() == original.predicted();
      for (size_t l = 0; l < shifts.size(); ++l) {
        shifts[l].outputRmse += rms(swapped.layers[l].output - original.layers[l].output);
        double distance = 0;
        for (size_t h = 0; h < original.layers[l].heads.size(); ++h) {
          const MatD& A = original.layers[l].heads[h].attention;
          distance += (swapped.layers[l].heads[h].attention - A).norm() / std::max(A.norm(), 1e-300);
        }
        shifts[l].attentionDistance += distance / double(original.layers[l].heads.size());
      }
    }
    if ((i + 1) % 500 == 0 || i + 1 == count)
      std::cerr << "\r  " << (i + 1) << "/" << count << " images" << std::flush;
  }
  std::cerr << "\n";
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  nlohmann::json report = {{"checkpoint", checkpoint},
                           {"split", part == FashionMnistPart::Train ? "train" : "test"},
                           {"images", count},
                           {"operator", config.attention.toString()},
                           {"accuracy", double(correct) / count},
                           {"seconds", seconds},
                           {"images_per_second", count / seconds}};
  std::cout << std::fixed << std::setprecision(2) << checkpoint << " (" << config.attention.toString() << "): "
            << 100.0 * correct / count << "% of " << count << " " << report["split"].get<std::string>()
            << " images, " << std::setprecision(1) << count / seconds << " images/s\n";
  if (swap) {
    report["swap"] = swap->toString();
    nlohmann::json swappedLayers = nlohmann::json::array(), perLayer = nlohmann::json::array();
    for (const auto& entry : swaps) swappedLayers.push_back(entry.first);
    report["swapped_layers"] = swappedLayers;
    report["swapped_accuracy"] = double(swappedCorrect) / count;
    report["agreement"] = double(agree) / count;
    std::cout << std::setprecision(2) << "with " << swap->toString() << " at " << swaps.size() << " layer(s): "
              << 100.0 * swappedCorrect / count << "%, agreement with the original predictions "
              << 100.0 * agree / count << "%\n  layer  output RMSE  attention distance (rel. Frobenius)\n";
    for (size_t l = 0; l < shifts.size(); ++l) {
      const double rmse = shifts[l].outputRmse / count, distance = shifts[l].attentionDistance / count;
      perLayer.push_back({{"layer", l}, {"swapped", swaps.count(int(l)) > 0}, {"output_rmse", rmse},
                          {"attention_distance", distance}});
      std::cout << std::setw(7) << l << (swaps.count(int(l)) ? "*" : " ") << std::scientific << std::setprecision(3)
                << std::setw(12) << rmse << std::setw(20) << distance << std::fixed << "\n";
    }
    std::cout << "  (* swapped layers; layers after the first swap change through their inputs)\n";
    report["layers"] = perLayer;
  }
  if (const auto json = cl.get("json")) writeFileAtomically(*json, report.dump(2) + "\n");
  return 0;
}

}  // namespace tl::cli
