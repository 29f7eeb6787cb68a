#include "training_bench.h"

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <thread>

#include <nlohmann/json.hpp>

#include "bench_common.h"
#include "common/errors.h"
#include "io/atomic_file.h"
#include "model/normalisers/normaliser_step_timing.h"
#include "model/training/vit_training.h"

namespace tl::cli {
namespace {

struct StepRow {
  std::string op, resolved;
  int n = 0;
  NormaliserStepTimes times;
};

void printTable(const std::vector<StepRow>& rows) {
  size_t width = 8;
  for (const auto& row : rows) width = std::max(width, row.op.size());
  std::printf("%-*s %6s %18s %16s %12s\n", int(width), "operator", "n", "training path ms", "dense graph ms",
              "dense/path");
  for (const auto& row : rows) {
    const double path = median(row.times.trainingPath), dense = median(row.times.denseGraph);
    std::printf("%-*s %6d %18.1f %16.1f %12.2f\n", int(width), row.op.c_str(), row.n, 1e3 * path, 1e3 * dense,
                dense / path);
  }
}

nlohmann::json stepJson(const std::vector<StepRow>& rows, const NormaliserStepShape& shape, int repeats, int threads) {
  nlohmann::json results = nlohmann::json::array();
  for (const auto& row : rows)
    results.push_back({{"op", row.op},
                       {"resolved", row.resolved},
                       {"n", row.n},
                       {"training_path_median_seconds", median(row.times.trainingPath)},
                       {"training_path_seconds", row.times.trainingPath},
                       {"dense_graph_median_seconds", median(row.times.denseGraph)},
                       {"dense_graph_seconds", row.times.denseGraph},
                       {"ratio_dense_over_training_path", median(row.times.denseGraph) / median(row.times.trainingPath)}});
  return {{"mode", "training"},
          {"precision", "f32"},
          {"batch", shape.batch},
          {"heads", shape.heads},
          {"d", shape.headDim},
          {"repeats", repeats},
          {"machine",
           {{"cpu_model", cpuModel()}, {"logical_cores", std::thread::hardware_concurrency()}, {"torch_threads", threads}}},
          {"results", results}};
}

}  // namespace

int trainingBench(const CommandLine& cl) {
  if (cl.has("lazy")) throw InvalidArgument("bench: --lazy times operators, not training steps; drop one of them");
  if (cl.has("precision")) throw InvalidArgument("bench --training runs in float32, as tlens train does; drop --precision");
  const std::vector<std::string> labels = cl.all("op");
  if (labels.empty()) throw InvalidArgument("'bench --training' needs at least one --op (see 'tlens bench --help')");
  NormaliserStepShape shape;
  shape.batch = parsePositiveInt("batch", cl.get("batch").value_or("128"));
  shape.heads = parsePositiveInt("heads", cl.get("heads").value_or("4"));
  shape.headDim = parsePositiveInt("d", cl.get("d").value_or("16"));
  const std::vector<int> sizes = parsePositiveIntList("n", cl.required("n"));
  const int repeats = parsePositiveInt("repeats", cl.get("repeats").value_or("5"));
  const int threads = useTorchThreads(1);

  std::vector<OperatorSpec> specs;
  for (const auto& label : labels) {
    specs.push_back(OperatorRegistry::builtin().parse(label));
    requireTrainable(specs.back());
  }
  std::vector<StepRow> rows;
  for (size_t s = 0; s < specs.size(); ++s) {
    const std::string& label = labels[s];
    const OperatorSpec& spec = specs[s];
    for (int n : sizes) {
      std::cerr << "timing a training step of " << label << " at n=" << n << " ...\n";
      shape.tokens = n;
      rows.push_back({label, spec.toString(), n, timeNormaliserStep(spec, shape, repeats)});
    }
  }
  std::printf("one training step (forward + backward) on the CPU (%s): float32, B=%d, H=%d, d=%d, %d thread, "
              "median of %d\n", cpuModel().c_str(), shape.batch, shape.heads, shape.headDim, threads, repeats);
  printTable(rows);
  if (const auto file = cl.get("json"))
    writeFileAtomically(*file, stepJson(rows, shape, repeats, threads).dump(2) + "\n");
  return 0;
}

}  // namespace tl::cli
