#include "model/training/training_run.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "common/errors.h"
#include "data/image_sampling.h"
#include "model/torchscript.h"
#include "model/training/lr_schedule.h"
#include "model/training/training_state.h"
#include "model/training/vit_training.h"

namespace tl {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kImageSize = FashionMnistSplit::kRows;
constexpr int kEvalBatch = 500;
// Fashion-MNIST's own pixel mean and standard deviation over the 60000 training images (after the [0, 1]
// rescale), stored in config.json so evaluation and inference normalise exactly as training did.
constexpr double kPixelMean = 0.2860, kPixelStd = 0.3530;

void require(bool ok, const std::string& message) {
  if (!ok) throw InvalidArgument(message);
}

void validate(const TrainingOptions& o) {
  require(o.epochs >= 1 && o.batch >= 1, "epochs and batch must be at least 1");
  require(o.dim >= 1 && o.depth >= 1 && o.heads >= 1 && o.mlp >= 1 && o.patch >= 1,
          "dim, depth, heads, mlp and patch must be at least 1");
  require(kImageSize % o.patch == 0, "patch " + std::to_string(o.patch) +
                                         " does not divide the 28-pixel images; choose 1, 2, 4, 7, 14 or 28");
  require(o.dim % o.heads == 0, "dim " + std::to_string(o.dim) + " is not a multiple of heads " +
                                    std::to_string(o.heads) + " (each head gets dim/heads features)");
  require(std::isfinite(o.lr) && o.lr > 0, "lr must be a positive number");
  require(std::isfinite(o.weightDecay) && o.weightDecay >= 0, "weight decay must be >= 0");
  require(o.labelSmoothing >= 0 && o.labelSmoothing < 1, "label smoothing must be in [0, 1)");
  require(o.warmup >= 0 && o.warmup <= 1, "warmup is a fraction of all steps, in [0, 1]");
  require(o.sortAnneal > 0 && o.sortAnneal <= 1, "sort anneal (ESP's per-epoch sort_temp factor) must be in (0, 1]");
  require(o.threads >= 0 && o.limitTrain >= 0 && o.limitTest >= 0, "threads and limits must be >= 0");
  require(!o.out.empty(), "an output folder for the checkpoints is needed");
}

OperatorSpec trainableAttention(const std::string& text) {
  OperatorSpec spec = OperatorRegistry::builtin().parse(text);
  if (!hasTorchNormaliser(spec.family))
    throw InvalidArgument("attention '" + spec.family + "' has no trainable (LibTorch) version; train with softmax, "
                          "sinkhorn, esp or lot");
  return spec;
}

VitConfig trainingConfig(const TrainingOptions& o, const OperatorSpec& spec) {
  VitConfig c;
  c.hiddenSize = o.dim;
  c.numLayers = o.depth;
  c.numHeads = o.heads;
  c.headDim = o.dim / o.heads;
  c.intermediateSize = o.mlp;
  c.imageSize = kImageSize;
  c.patchSize = o.patch;
  c.numChannels = 1;
  const auto& names = fashionMnistClassNames();
  c.labels.assign(names.begin(), names.end());
  c.attention = spec;
  c.normalisation = {{kPixelMean}, {kPixelStd}};
  return c;
}

// A fine-tuning run's model: the starting checkpoint's architecture, pixel normalisation and labels with the
// run's normaliser. Training continues on Fashion-MNIST, so the checkpoint must take its images and classes.
VitConfig fineTuningConfig(VitConfig config, const OperatorSpec& spec, const std::string& source) {
  auto require = [&](bool ok, const std::string& what) {
    if (!ok) throw InvalidArgument(source + ": " + what + ", so it cannot be fine-tuned on Fashion-MNIST");
  };
  require(config.imageSize == kImageSize && config.numChannels == 1,
          "the model takes " + std::to_string(config.imageSize) + "×" + std::to_string(config.imageSize) + " images with " +
              std::to_string(config.numChannels) + " channel(s), not 28×28 greyscale");
  require(config.numLabels() == int(fashionMnistClassNames().size()),
          "the model has " + std::to_string(config.numLabels()) + " classes, not Fashion-MNIST's 10");
  config.attention = spec;
  return config;
}

// The run's architecture options as the model has them (a fine-tuning run takes the checkpoint's).
void adoptArchitecture(TrainingOptions& o, const VitConfig& c) {
  o.dim = c.hiddenSize;
  o.depth = c.numLayers;
  o.heads = c.numHeads;
  o.mlp = c.intermediateSize;
  o.patch = c.patchSize;
}

// `fresh` (freshly initialised, with the run's normaliser) with every tensor the checkpoint also has
// replaced by the checkpoint's; the rest (a new normaliser's own parameters) keeps its fresh values.
TensorMap overlaid(TensorMap fresh, const TensorMap& checkpoint) {
  for (auto& [name, tensor] : fresh)
    if (const auto found = checkpoint.find(name); found != checkpoint.end()) tensor = found->second;
  return fresh;
}

FashionMnistSplit firstImages(FashionMnistSplit split, int limit) {
  if (limit <= 0 || limit >= split.count) return split;
  split.count = limit;
  split.images.resize(size_t(limit) * FashionMnistSplit::kRows * FashionMnistSplit::kCols);
  split.labels.resize(size_t(limit));
  return split;
}

int64_t parameterCount(const VitModel& model) {
  int64_t n = 0;
  for (const auto& p : model->parameters()) n += p.numel();
  return n;
}

bool holdsCheckpoint(const std::string& out) {
  return hasTrainingState(out) || std::filesystem::exists(std::filesystem::path(out) / "model.safetensors");
}

// The state a run starts from: a fresh one, or the stored one when resuming (with the same options).
StoredTraining startingState(const TrainingOptions& options) {
  if (!options.resume) {
    if (holdsCheckpoint(options.out))
      throw InvalidArgument(options.out + " already holds a trained model; continue it with --resume or choose "
                            "another output folder");
    return {TrainingState{options, 0, 0, {}}, {}};
  }
  StoredTraining stored = readTrainingState(options.out);
  const auto differing = differingTrainingOptions(stored.state.options, options);
  if (!differing.empty()) {
    std::string names;
    for (const auto& name : differing) names += (names.empty() ? "" : ", ") + name;
    throw InvalidArgument("--resume continues the run in " + options.out + " with its stored options, and these "
                          "differ: " + names + "; drop them or start a new run in another folder");
  }
  stored.state.options = options;  // the thread count may change (documented: the last bits may then differ)
  return stored;
}

class TrainingRun {
 public:
  TrainingRun(const TrainingOptions& options, const TrainingListener& listener, Feedback& feedback)
      : listener_(listener), feedback_(feedback), spec_(trainableAttention(options.attention)),
        config_(trainingConfig(options, spec_)) {
    TrainingOptions resolved = options;
    resolved.attention = spec_.toString();  // stored and compared in one spelling, defaults filled in
    resolved.threads = useTorchThreads(options.threads);
    StoredTraining start = startingState(resolved);
    state_ = std::move(start.state);
    train_ = firstImages(loadFashionMnist(FashionMnistPart::Train), resolved.limitTrain);
    test_ = firstImages(loadFashionMnist(FashionMnistPart::Test), resolved.limitTest);
    stepsPerEpoch_ = (train_.count + resolved.batch - 1) / resolved.batch;
    schedule_ = warmupCosine(resolved.lr, resolved.warmup, int64_t(resolved.epochs) * stepsPerEpoch_);

    torch::manual_seed(resolved.seed);
    VitModel model = startingModel(resolved);
    model->train();
    config_ = model->config();
    adoptArchitecture(resolved, config_);
    state_.options = resolved;
    trainer_ = std::make_unique<VitTrainer>(model, resolved.weightDecay, resolved.labelSmoothing);
    if (resolved.resume) trainer_->loadOptimizerState(start.optimizerBytes, resolved.out + "/training_state/optimizer.pt");

    report_.options = resolved;
    report_.attention = spec_.toString();
    report_.parameters = parameterCount(model);
    report_.trainImages = train_.count;
    report_.testImages = test_.count;
    report_.history = state_.history;
  }

  TrainingReport run() {
    for (int e = state_.completedEpochs; e < options().epochs; ++e)
      if (!trainEpoch(e)) break;
    return report_;
  }

 private:
  const TrainingOptions& options() const { return state_.options; }

  // A resumed run continues its stored model; a fine-tuning run starts from options.init's weights; any
  // other run from weights drawn from torch's generator.
  VitModel startingModel(const TrainingOptions& o) const {
    if (o.resume) return makeVitModel(readVitCheckpoint(o.out), o.out);
    if (o.init.empty()) return VitModel(config_);
    useLibTorchForTorchScript();  // --init may name a TorchScript archive
    const VitCheckpoint start = readVitCheckpoint(o.init);
    VitModel model(fineTuningConfig(start.config, spec_, o.init));
    model->load(overlaid(model->state(), start.tensors), o.init);
    return model;
  }

  // ESP's SoftSort temperature of epoch e (0-based): t_e = t_0·γ^e (docs/operators/esp.md#training); 0 for
  // other families.
  double sortTemp(int e) const {
    if (spec_.family != "esp") return 0;
    return getReal(spec_.params, "sort_temp") * std::pow(options().sortAnneal, e);
  }

  // False when cancelled before the epoch completed (its partial progress is dropped).
  bool trainEpoch(int e) {
    SeededRandom random(epochRandomSeed(options().seed, e));
    const std::vector<int64_t> order = shuffledIndices(train_.count, random);
    const std::optional<AttentionOverride> attention = trainingAttention(config_, sortTemp(e));
    EpochMetrics m;
    m.epoch = e + 1;
    m.sortTemp = sortTemp(e);
    double lossSum = 0;
    int64_t correct = 0, seen = 0;
    const auto start = Clock::now();
    for (int s = 0; s < stepsPerEpoch_; ++s) {
      if (feedback_.isCanceled()) {
        report_.stopped = true;
        report_.stoppedInEpoch = e + 1;
        report_.stoppedAtStep = s;
        return false;
      }
      const auto stepStart = Clock::now();
      const auto first = order.begin() + int64_t(s) * options().batch;
      const std::vector<int64_t> indices(first, first + std::min<int64_t>(options().batch, order.end() - first));
      m.lr = learningRate(schedule_, state_.step);
      const StepResult r = trainer_->step(batchPixels(config_, train_, indices, options().augment ? &random : nullptr),
                                          batchLabels(train_, indices), m.lr, attention ? &*attention : nullptr);
      ++state_.step;
      lossSum += r.loss * double(indices.size());
      correct += r.correct;
      seen += int64_t(indices.size());
      trainedImages_ += int64_t(indices.size());
      trainSeconds_ += std::chrono::duration<double>(Clock::now() - stepStart).count();
      reportStep(e, s + 1, r.loss, lossSum / double(seen), double(correct) / double(seen), seen, m.lr);
    }
    m.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    m.trainLoss = lossSum / double(seen);
    m.trainAccuracy = double(correct) / double(seen);
    finishEpoch(m);
    return true;
  }

  void reportStep(int e, int step, double stepLoss, double loss, double accuracy, int64_t seenThisEpoch, double lr) {
    TrainingProgress p;
    p.epoch = e + 1;
    p.epochs = options().epochs;
    p.step = step;
    p.steps = stepsPerEpoch_;
    p.stepLoss = stepLoss;
    p.loss = loss;
    p.accuracy = accuracy;
    p.imagesPerSecond = double(trainedImages_) / std::max(trainSeconds_, 1e-9);
    const int64_t remaining = int64_t(options().epochs - e - 1) * train_.count + (train_.count - seenThisEpoch);
    p.etaSeconds = double(remaining) / p.imagesPerSecond;
    p.lr = lr;
    feedback_.setProgress(doneFraction(), describeTrainingProgress(p));
    if (listener_.onStep) listener_.onStep(p);
  }

  double doneFraction() const { return double(state_.step) / double(schedule_.totalSteps); }

  // Test accuracy, then the checkpoint. Evaluation is not cancellable (its Feedback only reports), so a stop
  // requested here still keeps the epoch that has just been trained.
  void finishEpoch(EpochMetrics& m) {
    const auto start = Clock::now();
    const std::string epoch = "epoch " + std::to_string(m.epoch) + "/" + std::to_string(options().epochs) + "  ";
    Feedback evaluation([&](double, const std::string& stage) { feedback_.setProgress(doneFraction(), epoch + stage); });
    m.testAccuracy = evaluateAccuracy(trainer_->model(), test_, 0, kEvalBatch, evaluation).fraction();
    m.evalSeconds = std::chrono::duration<double>(Clock::now() - start).count();
    state_.completedEpochs = m.epoch;
    state_.history.push_back(m);
    writeVitCheckpoint(options().out, checkpointOf(trainer_->model()));
    writeTrainingState(options().out, state_, trainer_->optimizerState());
    report_.history = state_.history;
    if (listener_.onEpoch) listener_.onEpoch(m);
  }

  const TrainingListener& listener_;
  Feedback& feedback_;
  OperatorSpec spec_;
  VitConfig config_;
  TrainingState state_;
  FashionMnistSplit train_, test_;
  int stepsPerEpoch_ = 0;
  LrSchedule schedule_;
  std::unique_ptr<VitTrainer> trainer_;
  TrainingReport report_;
  int64_t trainedImages_ = 0;
  double trainSeconds_ = 0;
};

// "45s", "3m12s", "1h02m".
std::string formatDuration(double seconds) {
  const long long s = std::llround(std::max(0.0, seconds));
  char text[32];
  if (s < 60)
    std::snprintf(text, sizeof text, "%llds", s);
  else if (s < 3600)
    std::snprintf(text, sizeof text, "%lldm%02llds", s / 60, s % 60);
  else
    std::snprintf(text, sizeof text, "%lldh%02lldm", s / 3600, (s % 3600) / 60);
  return text;
}

}  // namespace

std::string describeTrainingProgress(const TrainingProgress& p) {
  char text[160];
  std::snprintf(text, sizeof text, "epoch %d/%d  step %d/%d  loss %.4f  acc %.1f%%  %.0f img/s  ETA %s", p.epoch,
                p.epochs, p.step, p.steps, p.loss, 100 * p.accuracy, p.imagesPerSecond,
                formatDuration(p.etaSeconds).c_str());
  return text;
}

TrainingReport trainVitOnFashionMnist(const TrainingOptions& options, const TrainingListener& listener,
                                      Feedback& feedback) {
  validate(options);
  return TrainingRun(options, listener, feedback).run();
}

}  // namespace tl
