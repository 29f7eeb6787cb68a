#pragma once
// Rank decay on a ViT checkpoint (docs/operators/rank-decay.md#checkpoints): the model runs on a set of
// images with its own normaliser or a core registry operator in every layer, under one of the four block
// configurations (skips removed and FFNs bypassed at inference), recording every head's attention and every
// block output. Layer 0 is the embedding ([CLS] + patches + positions) entering block 1. Plain headers: the
// CLI and the Engine reach it through rankdecay::installModelRecorder, which installVitModelBackend calls.
#include "data/fashion_mnist.h"
#include "rankdecay/experiment.h"

namespace tl {

// `source`: model:checkpoint=PATH,images=fashion-mnist:SPLIT:FIRST-LAST (or :INDEX). `op` null keeps each
// layer's trained normaliser. FileError for unreadable checkpoints or missing data, InvalidArgument for a
// malformed image range, Canceled between images and layers.
rankdecay::AttentionRecord recordCheckpoint(const rankdecay::RankDecaySource& source, const OperatorSpec* op,
                                            rankdecay::BlockConfig config, rankdecay::SkipScope scope,
                                            Feedback& feedback);

struct FashionMnistRange {
  FashionMnistPart part = FashionMnistPart::Test;
  int first = 0, last = 0;  // inclusive
};
FashionMnistRange parseFashionMnistRange(const std::string& text);

}  // namespace tl
