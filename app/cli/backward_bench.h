#pragma once
// `tlens bench --backward`: the banded backward (docs/operators/banded.md#gradients) timed per n, the
// one-reference R = 2 schedule against the direct four-plan form, each relative to the forward it belongs to.
#include "arguments.h"

namespace tl::cli {

int backwardBench(const CommandLine& cl);

}  // namespace tl::cli
