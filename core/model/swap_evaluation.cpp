#include "model/swap_evaluation.h"

#include <algorithm>
#include <chrono>
#include <map>

#include "analysis/plan_distance.h"
#include "common/errors.h"
#include "vit/model_image.h"

namespace tl {
namespace {

std::map<int, OperatorSpec> swapsAt(const OperatorSpec& swap, const std::vector<int>& layers, int numLayers) {
  std::map<int, OperatorSpec> swaps;
  if (layers.empty())
    for (int l = 0; l < numLayers; ++l) swaps[l] = swap;
  for (int l : layers) {
    if (l < 0 || l >= numLayers)
      throw InvalidArgument("layer " + std::to_string(l) + " is not a layer of this model; expected indices 0.." +
                            std::to_string(numLayers - 1));
    swaps[l] = swap;
  }
  return swaps;
}

// Adds one image's shifts to the running sums in `shifts`.
void addShifts(const VitTrace& original, const VitTrace& swapped, std::vector<LayerShift>& shifts) {
  for (size_t l = 0; l < shifts.size(); ++l) {
    const VitLayerTrace &before = original.layers[l], &after = swapped.layers[l];
    shifts[l].outputRmse += rmsDifference(after.output, before.output);
    double distance = 0;
    for (size_t h = 0; h < before.heads.size(); ++h)
      distance += relativeFrobenius(after.heads[h].attention, before.heads[h].attention);
    shifts[l].attentionDistance += distance / double(before.heads.size());
  }
}

}  // namespace

SwapEvaluation evaluateSwap(const VitRunner& runner, const SwapEvaluationOptions& options, Feedback& feedback) {
  const VitConfig& config = runner.config();
  SwapEvaluation r;
  r.op = config.attention.toString();
  std::map<int, OperatorSpec> swaps;
  if (options.swap) {
    swaps = swapsAt(*options.swap, options.layers, config.numLayers);
    r.swap = options.swap;
    for (const auto& entry : swaps) r.swappedLayers.push_back(entry.first);
    r.layers.resize(size_t(config.numLayers));
    for (int l = 0; l < config.numLayers; ++l) {
      r.layers[size_t(l)].layer = l;
      r.layers[size_t(l)].swapped = swaps.count(l) > 0;
    }
  }

  const FashionMnistSplit split = loadFashionMnist(options.split);  // the split's images, read once
  r.images = options.limit > 0 ? std::min(options.limit, split.count) : split.count;
  const size_t pixels = size_t(FashionMnistSplit::kRows) * FashionMnistSplit::kCols;
  // The model runs poll this part for cancellation; their per-layer progress stays below "image i/N".
  Feedback modelRun(feedback, {});
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < r.images; ++i) {
    feedback.throwIfCanceled();
    const int label = split.labels[size_t(i)];
    const ModelImage image = modelImageFromGrey(split.images.data() + size_t(i) * pixels, config, "", label);
    if (!options.swap) {
      const VecD logits = runner.logits(image.pixels);
      Eigen::Index predicted;
      logits.maxCoeff(&predicted);
      r.correct += int(predicted) == label;
    } else {
      const VitTrace original = runner.run(image.pixels, modelRun);
      const VitTrace swapped = runner.rerun(original, swaps.begin()->first, swaps, modelRun);
      r.correct += original.predicted() == label;
      r.swappedCorrect += swapped.predicted() == label;
      r.agreeing += swapped.predicted() == original.predicted();
      addShifts(original, swapped, r.layers);
    }
    feedback.setProgress(double(i + 1) / r.images, "image " + std::to_string(i + 1) + "/" + std::to_string(r.images));
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (LayerShift& shift : r.layers) {
    shift.outputRmse /= r.images;
    shift.attentionDistance /= r.images;
  }
  return r;
}

}  // namespace tl
