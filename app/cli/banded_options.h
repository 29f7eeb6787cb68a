#pragma once
// What `tlens grad` and `tlens certify` share: the input flags of `tlens plan` (less --device: both run on
// the CPU), the banded operator string and the loss weights G of L = Σ G_ij·O_ij.
#include <string>
#include <vector>

#include "arguments.h"
#include "common/attention_input.h"
#include "ops/banded/banded.h"

namespace tl::cli {

// --q, --k, --v, --mask, --source (and --precision when `withPrecision`).
std::vector<OptionSpec> bandedInputOptions(bool withPrecision);
// The banded parameters of --op; InvalidArgument (exit 2) for another family, naming it.
BandedParams bandedParamsFrom(const CommandLine& cl);
// The input of --source or --q/--k/--v/--mask, through the loader `tlens plan` uses (model sources included).
AttentionInput<double> bandedInputFrom(const CommandLine& cl);
// --loss-weights as a matrix (float32 or float64 .npy).
MatD lossWeightsFrom(const CommandLine& cl);

}  // namespace tl::cli
