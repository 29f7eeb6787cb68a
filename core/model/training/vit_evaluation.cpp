#include "model/training/vit_evaluation.h"

#include <chrono>

#include "common/errors.h"
#include "model/training/vit_training.h"

namespace tl {

FashionMnistAccuracy evaluateOnFashionMnist(const VitCheckpoint& checkpoint, const EvaluationOptions& options,
                                            Feedback& feedback) {
  const VitConfig& c = checkpoint.config;
  if (c.imageSize != FashionMnistSplit::kRows || c.numChannels != 1 || c.numLabels() != 10)
    throw InvalidArgument("this model takes " + std::to_string(c.numChannels) + "-channel " +
                          std::to_string(c.imageSize) + "×" + std::to_string(c.imageSize) + " images into " +
                          std::to_string(c.numLabels()) + " classes; Fashion-MNIST needs 1-channel 28×28 images "
                          "and 10 classes");
  if (options.batch < 1 || options.limit < 0) throw InvalidArgument("evaluation batch must be >= 1 and limit >= 0");
  useTorchThreads(options.threads);
  VitModel model = makeVitModel(checkpoint, "checkpoint");
  const FashionMnistSplit test = loadFashionMnist(FashionMnistPart::Test);
  const auto start = std::chrono::steady_clock::now();
  const AccuracyCount count = evaluateAccuracy(model, test, options.limit, options.batch, feedback);
  FashionMnistAccuracy out;
  out.images = count.total;
  out.correct = count.correct;
  out.accuracy = count.fraction();
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  out.confusion = count.confusion;
  return out;
}

}  // namespace tl
