#include "model/training/vit_training.h"

#include <dlfcn.h>

#include <algorithm>
#include <numeric>
#include <sstream>
#include <thread>

#include "common/errors.h"
#include "data/image_sampling.h"
#include "ops/esp/esp_params.h"

namespace tl {
namespace {

namespace F = torch::nn::functional;

// Global gradient-norm clip: Sinkhorn at small eps and SoftSort at small sort_temp have steep regions whose
// rare large gradients would otherwise undo many steps of AdamW's progress.
constexpr double kClipNorm = 1.0;
// Augmentation that keeps Fashion-MNIST's labels: every class (garments, shoes, bags) is still itself when
// mirrored left-right (unlike digits or text), and the items sit centred on a black background with a margin,
// so zero padding looks like background and a shift of up to 2 px keeps them in frame.
constexpr int kCropPadding = 2;
// Largest attention-sized tensor one forward pass may allocate. glibc serves blocks above 32 MiB with fresh
// mmap pages that the kernel zeroes on every step: ESP's [B, H, L, n, n] slice plans at batch 128 (82 MB)
// spent twice as long in page faults as in arithmetic. Smaller chunks stay in the reused heap.
constexpr double kChunkBytes = 16.0 * 1024 * 1024;

std::vector<torch::optim::OptimizerParamGroup> parameterGroups(const VitModel& model, double weightDecay) {
  std::vector<torch::Tensor> decayed, plain;
  for (const auto& p : model->named_parameters()) {
    const bool isMatrix = p.value().dim() >= 2 && p.key().size() >= 7 &&
                          p.key().compare(p.key().size() - 7, 7, ".weight") == 0;
    (isMatrix ? decayed : plain).push_back(p.value());
  }
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(decayed, std::make_unique<torch::optim::AdamWOptions>(
                                   torch::optim::AdamWOptions().weight_decay(weightDecay)));
  groups.emplace_back(plain, std::make_unique<torch::optim::AdamWOptions>(torch::optim::AdamWOptions().weight_decay(0)));
  return groups;
}

// Images per forward pass whose largest attention tensor fits kChunkBytes (float32): [H, n, n] per image,
// times L slices for ESP with p = 1, whose SoftSort plans are dense (p = 2 trains through the banded
// model/esp_soft_output.h; L = 0 means one slice per head dimension).
int64_t attentionChunk(const VitConfig& c) {
  double perImage = 4.0 * c.numHeads * double(c.numTokens()) * c.numTokens();
  if (c.attention.family == "esp" && EspParams::from(c.attention.params).costExponent() != 2) {
    const int64_t L = getInt(c.attention.params, "L");
    perImage *= double(L > 0 ? L : c.headDim);
  }
  return std::max<int64_t>(1, int64_t(kChunkBytes / perImage));
}

}  // namespace

int useTorchThreads(int requested) {
  const int threads = requested > 0 ? requested : std::max(1, int(std::thread::hardware_concurrency()));
  at::set_num_threads(threads);
  // LibTorch's matrix products run in the system BLAS (OpenBLAS after scripts/setup), whose own worker pool
  // ignores at::set_num_threads: with --threads 1 its idle workers spun in sched_yield on the other cores
  // (8–14 % of a training run's samples). Cap that pool too where the BLAS offers the call.
  using SetBlasThreads = void (*)(int);
  if (const auto setBlasThreads = reinterpret_cast<SetBlasThreads>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads")))
    setBlasThreads(threads);
  return threads;
}

torch::Tensor batchPixels(const VitConfig& config, const FashionMnistSplit& split, const std::vector<int64_t>& indices,
                          SeededRandom* augment) {
  constexpr int rows = FashionMnistSplit::kRows, cols = FashionMnistSplit::kCols, size = rows * cols;
  torch::Tensor out = torch::empty({int64_t(indices.size()), 1, rows, cols}, torch::kFloat32);
  float* dst = out.data_ptr<float>();
  std::vector<uint8_t> shifted(size);
  std::vector<float> unit(size);
  for (const int64_t index : indices) {
    const uint8_t* image = split.images.data() + index * size;
    if (augment) {
      randomCropFlip(image, shifted.data(), rows, cols, kCropPadding, *augment);
      image = shifted.data();
    }
    std::transform(image, image + size, unit.begin(), [](uint8_t v) { return float(v) / 255.0f; });
    const std::vector<float> normalised = normaliseImage(config, {1, rows, cols}, unit);
    dst = std::copy(normalised.begin(), normalised.end(), dst);
  }
  return out;
}

torch::Tensor batchLabels(const FashionMnistSplit& split, const std::vector<int64_t>& indices) {
  torch::Tensor labels = torch::empty({int64_t(indices.size())}, torch::kInt64);
  int64_t* dst = labels.data_ptr<int64_t>();
  for (const int64_t index : indices) *dst++ = split.labels[size_t(index)];
  return labels;
}

std::optional<AttentionOverride> trainingAttention(const VitConfig& config, double sortTemp) {
  if (config.attention.family != "esp") return std::nullopt;
  OperatorSpec annealed = config.attention;
  annealed.params["sort_temp"] = sortTemp;
  const TorchNormaliser normaliser = makeTorchNormaliser(annealed, config.numHeads, config.headDim);
  normaliser->train();  // SoftSort plans: the ESP normaliser sorts hard only in eval mode
  return AttentionOverride([normaliser](const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v) {
    return normaliser->forward(q, k, v, /*withAttention=*/false);
  });
}

VitTrainer::VitTrainer(VitModel model, double weightDecay, double labelSmoothing)
    : model_(std::move(model)), labelSmoothing_(labelSmoothing), chunk_(attentionChunk(model_->config())),
      optimizer_(parameterGroups(model_, weightDecay)) {}

torch::Tensor VitTrainer::forward(const torch::Tensor& pixels, const AttentionOverride* attention) {
  if (!attention) return model_->forward(pixels);
  torch::Tensor hidden = model_->embed(pixels);
  for (int l = 0; l < model_->config().numLayers; ++l) hidden = model_->layer(l)->forward(hidden, nullptr, attention);
  return model_->classify(hidden);
}

StepResult VitTrainer::step(const torch::Tensor& pixels, const torch::Tensor& labels, double lr,
                            const AttentionOverride* attention) {
  for (auto& group : optimizer_.param_groups()) static_cast<torch::optim::AdamWOptions&>(group.options()).lr(lr);
  optimizer_.zero_grad();
  // Gradients accumulate over chunks of the batch (see kChunkBytes); each chunk's mean loss weighs
  // len/B, so the sum is the batch's mean loss and its gradient.
  StepResult result;
  const int64_t batch = pixels.size(0);
  for (int64_t start = 0; start < batch; start += chunk_) {
    const int64_t len = std::min(chunk_, batch - start);
    const torch::Tensor y = labels.narrow(0, start, len);
    const torch::Tensor logits = forward(pixels.narrow(0, start, len), attention);
    const torch::Tensor loss = F::cross_entropy(logits, y, F::CrossEntropyFuncOptions().label_smoothing(labelSmoothing_)) *
                               (double(len) / double(batch));
    loss.backward();
    result.loss += loss.item<double>();
    result.correct += logits.argmax(1).eq(y).sum().item<int64_t>();
  }
  torch::nn::utils::clip_grad_norm_(model_->parameters(), kClipNorm);
  optimizer_.step();
  return result;
}

std::string VitTrainer::optimizerState() const {
  torch::serialize::OutputArchive archive;
  optimizer_.save(archive);
  std::ostringstream bytes;
  archive.save_to(bytes);
  return bytes.str();
}

void VitTrainer::loadOptimizerState(const std::string& bytes, const std::string& source) {
  try {
    torch::serialize::InputArchive archive;
    std::istringstream stream(bytes);
    archive.load_from(stream);
    optimizer_.load(archive);
  } catch (const c10::Error& e) {
    throw FileError(source + ": not an optimiser state of this model (" + e.what_without_backtrace() + ")");
  }
}

AccuracyCount evaluateAccuracy(VitModel& model, const FashionMnistSplit& split, int limit, int batch,
                               Feedback& feedback) {
  const int64_t n = limit > 0 ? std::min(limit, split.count) : split.count;
  batch = int(std::min<int64_t>(batch, attentionChunk(model->config())));
  const int classes = model->config().numLabels();
  AccuracyCount count;
  count.confusion.assign(size_t(classes), std::vector<int64_t>(size_t(classes), 0));
  struct RestoreMode {
    VitModel& model;
    bool training;
    ~RestoreMode() { model->train(training); }
  } restore{model, model->is_training()};
  model->eval();
  torch::NoGradGuard noGrad;
  std::vector<int64_t> indices;
  for (int64_t start = 0; start < n; start += batch) {
    feedback.throwIfCanceled();
    indices.resize(size_t(std::min<int64_t>(batch, n - start)));
    std::iota(indices.begin(), indices.end(), start);
    const torch::Tensor predicted = model->forward(batchPixels(model->config(), split, indices, nullptr)).argmax(1);
    const int64_t* p = predicted.data_ptr<int64_t>();
    for (size_t i = 0; i < indices.size(); ++i) {
      const int truth = split.labels[size_t(indices[i])];
      if (truth >= classes) throw InvalidArgument("label " + std::to_string(truth) + " is not one of the model's " +
                                                  std::to_string(classes) + " classes");
      ++count.confusion[size_t(truth)][size_t(p[i])];
      count.correct += p[i] == truth;
    }
    count.total += int64_t(indices.size());
    feedback.setProgress(double(count.total) / double(n),
                         "evaluating image " + std::to_string(count.total) + "/" + std::to_string(n));
  }
  return count;
}

}  // namespace tl
