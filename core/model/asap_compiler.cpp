// The ASAP compiler (docs/operators/asap.md#compiled-models). No LibTorch here: the model runs through
// VitRunner.
#include "model/asap_compiler.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <regex>

#include "common/errors.h"
#include "data/fashion_mnist.h"
#include "ops/sinkhorn/sinkhorn.h"
#include "ops/slicers.h"
#include "vit/model_image.h"

namespace tl {
namespace {

struct Calibration {
  FashionMnistPart part;
  int first, last;  // inclusive
};

Calibration parseCalibration(const std::string& text) {
  static const std::regex form(R"(fashion-mnist:(train|test):(\d{1,6})-(\d{1,6}))");
  std::smatch m;
  if (!std::regex_match(text, m, form) || std::stoi(m[2]) > std::stoi(m[3]))
    throw InvalidArgument("--calib '" + text + "' is not valid; expected fashion-mnist:train|test:FIRST-LAST, e.g. "
                          "fashion-mnist:train:0-999");
  return {m[1] == "train" ? FashionMnistPart::Train : FashionMnistPart::Test, std::stoi(m[2]), std::stoi(m[3])};
}

// The teacher's Sinkhorn and the budget whose final u is its closure-ready dual.
SinkhornParams teacherExtraction(const OperatorSpec& attention) {
  if (attention.family != "sinkhorn")
    throw InvalidArgument("asap-compile needs a Sinkhorn teacher; this checkpoint's attention is " +
                          attention.toString());
  SinkhornParams p = SinkhornParams::from(attention.params);
  if (p.T < 2)
    throw InvalidArgument("the teacher has T = 1: it is plain softmax and there is nothing to compile");
  if (p.T % 2 == 1) p.T -= 2;  // row-ending: u after step T − 2 (for T = 3: after step 1)
  return p;
}

std::vector<int> layersToCompile(const std::vector<int>& asked, int numLayers) {
  std::vector<int> layers = asked;
  if (layers.empty())
    for (int l = 0; l < numLayers; ++l) layers.push_back(l);
  std::sort(layers.begin(), layers.end());
  layers.erase(std::unique(layers.begin(), layers.end()), layers.end());
  for (int l : layers)
    if (l < 0 || l >= numLayers)
      throw InvalidArgument("layer " + std::to_string(l) + " is not a layer of this model; expected indices 0.." +
                            std::to_string(numLayers - 1));
  return layers;
}

// Calibration instances of the layers in `wanted`, with the seconds the teacher's Sinkhorn took per layer.
struct Extraction {
  std::map<int, std::vector<FitInstance>> instances;
  std::map<int, double> seconds;
};

void extractLayer(const VitLayerTrace& layer, int index, const SinkhornParams& teacher, Extraction& into) {
  const auto start = std::chrono::steady_clock::now();
  for (const VitHeadTrace& head : layer.heads) {
    const AttentionInput<double> input{head.input.Q, head.input.K, std::nullopt, std::nullopt};
    into.instances[index].push_back({head.input.Q, head.input.K, sinkhornAttention(input, teacher).u, std::nullopt});
  }
  into.seconds[index] += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

CompiledAsapLayer fitOne(int layer, uint64_t seed, std::vector<FitInstance>& instances, double extractionSeconds,
                         int d, const AsapCompileOptions& o, double eps, Feedback& feedback) {
  CompiledAsapLayer c;
  c.layer = layer;
  c.seed = seed;
  c.slices = sliceDirections({Slicer::Random, o.L, c.seed, {}}, d);
  const LayerFit fit =
      fitLayer(instances, c.slices, {eps, MaskMode::Subsequence, o.features}, o.lambdaB, o.fit, feedback);
  c.beta = fit.beta;
  c.keyBeta = fit.keyBeta;
  if (fit.keyQuality) {
    c.keyR2 = fit.keyQuality->r2;
    c.keyDelta = fit.keyQuality->delta;
  }
  c.fit = fitKindName(o.fit);
  c.lambdaB = fit.ls.lambdaB;
  c.lambda = fit.ls.lambda;
  c.rows = fit.ls.rows;
  c.instances = (long long)instances.size();
  c.r2 = fit.quality.r2;
  c.delta = fit.quality.delta;
  c.fitSeconds = extractionSeconds + fit.seconds;
  c.converged = !fit.kl || fit.kl->converged;
  instances.clear();
  instances.shrink_to_fit();
  return c;
}

}  // namespace

CompiledAsap compileAsap(const VitRunner& runner, const std::string& checkpoint, const AsapCompileOptions& o,
                         Feedback& feedback) {
  const VitConfig& config = runner.config();
  const Calibration calibration = parseCalibration(o.calibration);
  const SinkhornParams teacher = teacherExtraction(config.attention);
  const std::vector<int> layers = layersToCompile(o.layers, config.numLayers);
  if (o.L < 1) throw InvalidArgument("--slices must be a positive number of slices");
  if (o.out.empty()) throw InvalidArgument("asap-compile needs an output folder");
  if (o.shared && o.sequential)
    throw InvalidArgument("--shared fits one beta on every layer at once; it cannot be combined with --sequential");
  if (o.fit == FitKind::Kl && predictsBothDuals(o.features))
    throw InvalidArgument("--fit kl is not defined for --features predict-both (the KL surrogate is the key-closed "
                          "plan, which predict-both never forms); use --fit ls");
  const FashionMnistSplit split = loadFashionMnist(calibration.part);
  if (calibration.last >= split.count)
    throw InvalidArgument("--calib asks for image " + std::to_string(calibration.last) + " but the split has " +
                          std::to_string(split.count));

  CompiledAsap compiled;
  compiled.checkpoint = checkpoint;
  compiled.calibration = o.calibration;
  compiled.teacher = config.attention.toString();
  compiled.T = int(getInt(config.attention.params, "T"));
  compiled.eps = teacher.eps;
  compiled.closing = compiled.T % 2 == 0 ? "column" : "row";
  compiled.sequential = o.sequential;
  compiled.shared = o.shared;
  compiled.features = asapFeaturesName(o.features);

  const int images = calibration.last - calibration.first + 1;
  const size_t pixels = size_t(FashionMnistSplit::kRows) * FashionMnistSplit::kCols;
  const int d = config.headDim;
  // One pass over the calibration images extracts `wanted`, with the compiled layers so far swapped in
  // (sequential) or the teacher everywhere (parallel).
  auto extract = [&](const std::vector<int>& wanted, const std::string& stage) {
    Extraction e;
    std::map<int, OperatorSpec> swaps;
    if (o.sequential && !compiled.layers.empty()) {
      const OperatorSpec asap = OperatorRegistry::builtin().parse(compiledAsapOperator(compiled, o.out));
      for (const auto& l : compiled.layers) swaps[l.layer] = asap;
    }
    Feedback modelRun(feedback, {});
    for (int i = 0; i < images; ++i) {
      feedback.throwIfCanceled();
      const int index = calibration.first + i;
      const ModelImage image = modelImageFromGrey(split.images.data() + size_t(index) * pixels, config, "", std::nullopt);
      VitTrace trace = runner.run(image.pixels, modelRun);
      if (!swaps.empty()) trace = runner.rerun(trace, swaps.begin()->first, swaps, modelRun);
      for (int l : wanted) extractLayer(trace.layers[size_t(l)], l, teacher, e);
      feedback.setProgress(double(i + 1) / images,
                           stage + "image " + std::to_string(i + 1) + "/" + std::to_string(images));
    }
    return e;
  };
  Feedback fitting(feedback, {});
  if (o.sequential) {
    for (int l : layers) {
      Extraction e = extract({l}, "layer " + std::to_string(l) + ": ");
      compiled.layers.push_back(fitOne(l, o.seed + uint64_t(l), e.instances[l], e.seconds[l], d, o, teacher.eps, fitting));
      compiled.roundToStoredPrecision();
      saveCompiledAsap(o.out, compiled);  // the next layer's swaps read it
    }
  } else if (o.shared) {  // the "shared coefficients" design: every layer's instances in one fit
    Extraction e = extract(layers, "");
    std::vector<FitInstance> pooled;
    double seconds = 0;
    for (int l : layers) {
      pooled.insert(pooled.end(), e.instances[l].begin(), e.instances[l].end());
      e.instances[l].clear();
      seconds += e.seconds[l];
    }
    feedback.setProgress(1.0, "fitting the shared layer");
    const CompiledAsapLayer shared = fitOne(layers.front(), o.seed, pooled, seconds, d, o, teacher.eps, fitting);
    for (int l : layers) {
      compiled.layers.push_back(shared);
      compiled.layers.back().layer = l;
    }
    compiled.roundToStoredPrecision();
    saveCompiledAsap(o.out, compiled);
  } else {
    Extraction e = extract(layers, "");
    for (int l : layers) {
      feedback.setProgress(1.0, "fitting layer " + std::to_string(l));
      compiled.layers.push_back(fitOne(l, o.seed + uint64_t(l), e.instances[l], e.seconds[l], d, o, teacher.eps, fitting));
    }
    compiled.roundToStoredPrecision();
    saveCompiledAsap(o.out, compiled);
  }
  return compiled;
}

}  // namespace tl
