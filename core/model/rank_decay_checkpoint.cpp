#include "model/rank_decay_checkpoint.h"

#include <regex>

#include "analysis/plan_stats.h"
#include "common/errors.h"
#include "model/core_attention.h"
#include "vit/model_image.h"

namespace tl {

FashionMnistRange parseFashionMnistRange(const std::string& text) {
  static const std::regex form(R"(fashion-mnist:(train|test):(\d{1,5})(?:-(\d{1,5}))?)");
  std::smatch m;
  if (!std::regex_match(text, m, form))
    throw InvalidArgument("images: '" + text + "' is not of the form fashion-mnist:test:0-99 (or :train:, or one index)");
  FashionMnistRange range;
  range.part = m[1] == "train" ? FashionMnistPart::Train : FashionMnistPart::Test;
  range.first = std::stoi(m[2]);
  range.last = m[3].matched ? std::stoi(m[3]) : range.first;
  if (range.last < range.first)
    throw InvalidArgument("images: the range " + text + " ends before it starts");
  return range;
}

namespace {

MarginalErrors unitMarginalErrors(const MatD& plan) {
  return marginalErrors(plan, VecD::Ones(plan.rows()), VecD::Ones(plan.cols()));
}

}  // namespace

rankdecay::AttentionRecord recordCheckpoint(const rankdecay::RankDecaySource& source, const OperatorSpec* op,
                                            rankdecay::BlockConfig config, rankdecay::SkipScope scope,
                                            Feedback& feedback) {
  const std::string path = *getOptionalString(source.params, "checkpoint");
  const FashionMnistRange range = parseFashionMnistRange(getString(source.params, "images"));
  const FashionMnistSplit split = loadFashionMnist(range.part);
  if (range.last >= split.count)
    throw InvalidArgument("images: index " + std::to_string(range.last) + " is beyond the split's " +
                          std::to_string(split.count) + " images");
  VitModel model = makeVitModel(readVitCheckpoint(path), path);
  const VitConfig& c = model->config();
  const rankdecay::BlockSwitches switches = rankdecay::switchesFor(config, scope);
  const int images = range.last - range.first + 1, L = c.numLayers;
  rankdecay::AttentionRecord record = rankdecay::AttentionRecord::sized(L, images, c.numHeads);
  torch::NoGradGuard noGrad;
  for (int b = 0; b < images; ++b) {
    feedback.throwIfCanceled();
    feedback.setProgress(double(b) / images, "image " + std::to_string(b + 1) + "/" + std::to_string(images));
    const int index = range.first + b;
    const ModelImage image = modelImageFromGrey(&split.images[size_t(index) * 28 * 28], c, "", std::nullopt);
    torch::Tensor hidden = model->embed(pixelTensor(c, image.pixels));
    record.outputs[size_t(b)].push_back(toEigen(hidden[0]));
    for (int l = 0; l < L; ++l) {
      feedback.throwIfCanceled();
      VitLayer& layer = model->layer(l);
      VitAttentionTrace trace;
      std::vector<MarginalErrors> errors;
      if (op) {
        CoreAttention core(atLayer(*op, l), layer, feedback, DeviceChoice::Cpu);
        const AttentionOverride override = [&core](const torch::Tensor& q, const torch::Tensor& k,
                                                   const torch::Tensor& v) { return core(q, k, v); };
        hidden = layer->forward(hidden, &trace, &override, &switches);
        for (const auto& result : core.results) errors.push_back(result.errors);
      } else {
        hidden = layer->forward(hidden, &trace, nullptr, &switches);
      }
      for (int h = 0; h < c.numHeads; ++h) {
        MatD plan = toEigen(trace.attention[0][h]);
        record.errors[record.index(l, b, h)] = op ? errors[size_t(h)] : unitMarginalErrors(plan);
        record.attention[record.index(l, b, h)] = std::move(plan);
      }
      record.outputs[size_t(b)].push_back(toEigen(hidden[0]));
    }
  }
  return record;
}

}  // namespace tl
