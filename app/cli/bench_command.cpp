// `tlens bench`: median wall time of each operator's C++ CPU path per n, next to the PyTorch reference
// formulation (scripts/reference/bench_reference.py) run in the same invocation on the same machine.
// Speed is reported, never asserted (ARCHITECTURE.md, tests).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>

#include <Eigen/Core>

#include "arguments.h"
#include "commands.h"
#include "common/errors.h"
#include "data/random.h"
#include "io/atomic_file.h"
#include "ops/registry.h"
#include "reference_bench.h"
#include "session/session.h"

namespace tl::cli {
namespace {

CommandLine benchCommandLine() {
  return CommandLine(
      "bench", "Time operators on the C++ CPU path and, side by side, the PyTorch reference formulation.",
      {{"op", "SPEC", "operator to time, e.g. \"sinkhorn:T=10\"", true},
       {"n", "N1,N2,...", "sequence lengths, e.g. 128,256,512,1024"},
       {"d", "D", "head dimension (default 64)"},
       {"repeats", "R", "timed runs per operator and n; the median is reported (default 7)"},
       {"precision", "f64|f32", "computation precision (default f64)"},
       {"json", "FILE", "also write every timing as JSON to FILE"}});
}

// One head with Q, K, V ~ N(0, 1), n × d: the distribution bench_reference.py draws as well.
template <class T>
AttentionInput<T> gaussianHead(int n, int d, uint64_t seed) {
  SeededRandom random(seed);
  auto draw = [&] {
    Mat<T> m(n, d);
    for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = T(random.normal());
    return m;
  };
  AttentionInput<T> input;
  input.Q = draw();
  input.K = draw();
  input.V = draw();
  return input;
}

double median(std::vector<double> xs) {
  std::sort(xs.begin(), xs.end());
  const size_t m = xs.size() / 2;
  return xs.size() % 2 ? xs[m] : 0.5 * (xs[m - 1] + xs[m]);
}

// Times the operator call only (scores, normalisations, dense plan, output, its own diagnostics), after
// one untimed warm-up run.
template <class T>
std::vector<double> timeOperator(const Operator& op, int n, int d, int repeats) {
  const AttentionInput<T> input = gaussianHead<T>(n, d, 0);
  op.run(input, noFeedback());
  std::vector<double> seconds;
  for (int r = 0; r < repeats; ++r) {
    const auto start = std::chrono::steady_clock::now();
    op.run(input, noFeedback());
    seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return seconds;
}

struct BenchRow {
  std::string op;
  int n = 0;
  std::vector<double> cppSeconds;
  std::optional<double> referenceSeconds;
};

void printTable(const std::vector<BenchRow>& rows) {
  size_t width = 8;
  for (const auto& row : rows) width = std::max(width, row.op.size());
  std::printf("%-*s %7s %12s %12s %10s\n", int(width), "operator", "n", "C++ ms", "torch ms", "torch/C++");
  for (const auto& row : rows) {
    const double cpp = median(row.cppSeconds);
    std::printf("%-*s %7d %12.3f", int(width), row.op.c_str(), row.n, 1e3 * cpp);
    if (row.referenceSeconds)
      std::printf(" %12.3f %10.2f\n", 1e3 * *row.referenceSeconds, *row.referenceSeconds / cpp);
    else
      std::printf(" %12s %10s\n", "-", "-");
  }
}

nlohmann::json benchJson(const std::vector<BenchRow>& rows, const ReferenceBenchRequest& request,
                         const ReferenceTimings& reference) {
  nlohmann::json results = nlohmann::json::array();
  for (const auto& row : rows) {
    nlohmann::json entry = {{"op", row.op},
                            {"n", row.n},
                            {"cpp_median_seconds", median(row.cppSeconds)},
                            {"cpp_seconds", row.cppSeconds}};
    if (row.referenceSeconds) {
      entry["reference_median_seconds"] = *row.referenceSeconds;
      entry["ratio_reference_over_cpp"] = *row.referenceSeconds / median(row.cppSeconds);
    }
    results.push_back(entry);
  }
  return {{"d", request.d},
          {"repeats", request.repeats},
          {"precision", request.precision},
          {"cpp_threads", request.threads},
          {"reference",
           {{"available", reference.available},
            {"reason", reference.reason},
            {"script", referenceBenchScript()},
            {"report", reference.report}}},
          {"results", results}};
}

}  // namespace

int benchCommand(const Args& args) {
  CommandLine cl = benchCommandLine();
  cl.parse(args);
  if (cl.helpRequested()) {
    std::cout << cl.usage() << "\n" << operatorsHelp();
    return 0;
  }
  ReferenceBenchRequest request;
  std::vector<OperatorSpec> specs;
  for (const auto& text : cl.all("op")) specs.push_back(OperatorRegistry::builtin().parse(text));
  if (specs.empty()) throw InvalidArgument("'bench' needs at least one --op (see 'tlens bench --help')");
  for (const auto& spec : specs) request.ops.push_back(spec.toString());
  request.sizes = parsePositiveIntList("n", cl.required("n"));
  request.d = parsePositiveInt("d", cl.get("d").value_or("64"));
  request.repeats = parsePositiveInt("repeats", cl.get("repeats").value_or("7"));
  const Precision precision = parsePrecision(cl.get("precision").value_or("f64"));
  request.precision = precisionName(precision);
  // The reference gets as many threads as the C++ path uses: Eigen's count (1 unless built with OpenMP).
  request.threads = Eigen::nbThreads();

  std::vector<BenchRow> rows;
  for (const auto& spec : specs) {
    const auto op = OperatorRegistry::builtin().create(spec);
    for (int n : request.sizes) {
      std::cerr << "timing " << spec.toString() << " at n=" << n << " ...\n";
      rows.push_back({spec.toString(), n,
                      precision == Precision::F64 ? timeOperator<double>(*op, n, request.d, request.repeats)
                                                  : timeOperator<float>(*op, n, request.d, request.repeats),
                      std::nullopt});
    }
  }
  std::cerr << "timing the PyTorch reference (" << referencePython() << ") ...\n";
  const ReferenceTimings reference = runReferenceBench(request);
  for (auto& row : rows) row.referenceSeconds = reference.medianSeconds(row.op, row.n);

  std::printf("C++ CPU path: %d thread(s), %s, d=%d, median of %d runs\n", request.threads,
              request.precision.c_str(), request.d, request.repeats);
  if (reference.available)
    std::printf("reference: PyTorch %s, %d thread(s)\n", reference.report.value("torch", "?").c_str(),
                reference.report.value("threads", 0));
  else
    std::printf("reference: not run (%s)\n", reference.reason.c_str());
  printTable(rows);
  if (const auto file = cl.get("json")) writeFileAtomically(*file, benchJson(rows, request, reference).dump(2) + "\n");
  return 0;
}

}  // namespace tl::cli
