#pragma once
// The least work of one operator run as `tlens bench` times it (one head, n_q = n_k = n, d_v = d, the dense plan
// formed): what no implementation of the operator's definition can skip, counted in the three units the CPU
// floor measures (cpu_floor.h), so that its time can be read as a multiple of what this machine allows.
#include <optional>

#include "ops/registry.h"

namespace tl::cli {

struct LeastWork {
  // Exponentials, each of an entry that is read once (a log-sum-exp pass, or the plan formed from the scores).
  double exponentials = 0;
  // Entries streamed without an exponential: a dense n × n plan assembled from a structured one and written out.
  double streamedEntries = 0;
  // Multiply-adds of the products (scores, projections, costs, the output).
  double multiplyAdds = 0;
};

// nullopt where the least work depends on more than the parameters (a compiled ASAP file, slices read from a
// file with L = 0, a banded dustbin, SoftSort): docs/cli.md#bench lists what each family counts.
std::optional<LeastWork> leastWork(const OperatorSpec& spec, int n, int d);

}  // namespace tl::cli
