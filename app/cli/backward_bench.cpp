#include "backward_bench.h"

#include <cstdio>
#include <iostream>

#include <nlohmann/json.hpp>

#include "bench_common.h"
#include "common/errors.h"
#include "data/random.h"
#include "io/atomic_file.h"
#include "ops/banded/banded_gradients.h"
#include "ops/registry.h"
#include "session/session.h"

namespace tl::cli {
namespace {

struct Timings {
  std::vector<double> forward, oneReference, direct;
};

// Q, K, V ~ N(0, 1) (seed 0), G ~ N(0, 1) (seed 1), n × d; the schedules run alternately so that machine noise hits both alike.
template <class T>
Timings timeBackward(const BandedParams& p, int n, int d, int repeats) {
  const AttentionInput<T> input = gaussianHead<T>(n, d, 0);
  SeededRandom random(1);
  const Mat<T> G = gaussianMatrix<T>(random, n, d);
  const BandedGradientOptions oneRef{BandedGradientMode::Surrogate, BandedTailSchedule::OneReference};
  const BandedGradientOptions direct{BandedGradientMode::Surrogate, BandedTailSchedule::Direct};
  (void)bandedGradients(input, p, G, oneRef);  // warm-up
  Timings t;
  for (int r = 0; r < repeats; ++r) {
    const auto a = bandedGradients(input, p, G, oneRef);
    const auto b = bandedGradients(input, p, G, direct);
    t.forward.push_back(a.forwardSeconds);
    t.forward.push_back(b.forwardSeconds);
    t.oneReference.push_back(a.backwardSeconds);
    t.direct.push_back(b.backwardSeconds);
  }
  return t;
}

}  // namespace

int backwardBench(const CommandLine& cl) {
  const std::vector<std::string> ops = cl.all("op");
  if (ops.size() != 1) throw InvalidArgument("bench --backward: give exactly one banded --op");
  const OperatorSpec spec = OperatorRegistry::builtin().parse(ops.front());
  if (spec.family != "banded") throw InvalidArgument("bench --backward: the operator must be banded (got '" + spec.family + "')");
  const BandedParams p = BandedParams::from(spec.params);
  if (p.tailSteps != 2)
    throw InvalidArgument("bench --backward compares the R = 2 schedules: use tail_steps=2 (got " +
                          std::to_string(p.tailSteps) + ")");
  const std::vector<int> sizes = parsePositiveIntList("n", cl.required("n"));
  const int d = parsePositiveInt("d", cl.get("d").value_or("64"));
  const int repeats = parsePositiveInt("repeats", cl.get("repeats").value_or("5"));
  const Precision precision = parsePrecision(cl.get("precision").value_or("f32"));

  std::printf("banded backward, surrogate R = 2 (%s): %s, d=%d, median of %d runs\n", spec.toString().c_str(),
              precisionName(precision), d, repeats);
  std::printf("%7s %12s %14s %12s %14s %16s\n", "n", "forward ms", "one-ref ms", "direct ms", "direct/one-ref",
              "one-ref/forward");
  nlohmann::json results = nlohmann::json::array();
  for (int n : sizes) {
    std::cerr << "timing the banded backward at n=" << n << " ...\n";
    const Timings t = precision == Precision::F64 ? timeBackward<double>(p, n, d, repeats)
                                                  : timeBackward<float>(p, n, d, repeats);
    const double fwd = median(t.forward), one = median(t.oneReference), dir = median(t.direct);
    std::printf("%7d %12.2f %14.2f %12.2f %14.2f %16.2f\n", n, 1e3 * fwd, 1e3 * one, 1e3 * dir, dir / one, one / fwd);
    results.push_back({{"n", n},
                       {"forward_median_seconds", fwd},
                       {"one_reference_median_seconds", one},
                       {"direct_median_seconds", dir},
                       {"direct_over_one_reference", dir / one},
                       {"one_reference_over_forward", one / fwd}});
  }
  if (const auto file = cl.get("json"))
    writeFileAtomically(*file, nlohmann::json{{"op", spec.toString()},
                                              {"precision", precisionName(precision)},
                                              {"d", d},
                                              {"repeats", repeats},
                                              {"cpu_model", cpuModel()},
                                              {"results", results}}
                                       .dump(2) + "\n");
  return 0;
}

}  // namespace tl::cli
