// `tlens bench`: median wall time of each operator's C++ CPU path per n, next to the PyTorch reference
// formulation (scripts/reference/bench_reference.py) run in the same invocation on the same machine.
// Speed is reported, never asserted (docs/architecture.md#tests). With --lazy both sides time O = A·V only
// (the structured plans of ops/transport_plan.h), so banded, ESP hard and LOT reach large n.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <thread>

#include <Eigen/Core>

#include "arguments.h"
#include "backward_bench.h"
#include "bench_common.h"
#include "commands.h"
#include "ops/asap/compiled_asap.h"
#include "common/errors.h"
#include "common/large_buffers.h"
#include "common/parallel.h"
#include "cpu_floor.h"
#include "data/random.h"
#include "gpu_bench.h"
#include "io/atomic_file.h"
#include "io/npy.h"
#include "ops/registry.h"
#include "reference_bench.h"
#include "session/session.h"
#include "load_bench.h"
#include "training_bench.h"

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
       {"threads", "N", "threads of the C++ path and of the PyTorch reference (default: every core)"},
       {"floor", "", "also measure this CPU's floor (vectorised exp, streaming read, multiply-add peak; 1 thread "
                     "and --threads, then around each operator's timing) and report each operator's time as a "
                     "multiple of the faster floor around it"},
       {"lazy", "", "time O = A·V without the n×n plan (families with a lazy path: banded, esp hard, lot)"},
       {"backward", "", "time the banded backward (one --op banded:...,tail_steps=2): one-reference vs direct "
                        "four-plan schedule, and each against the forward (default --precision f32, --repeats 5)"},
       {"training", "", "time one training step (forward + backward, float32) of each LibTorch normaliser, "
                        "next to its dense graph (default --d 16)"},
       {"device", "cpu|cuda", "cuda: time the fused CUDA paths (fp32 and tf32) at --batch × --heads heads beside "
                              "the GPU's exp floor, PyTorch SDPA, the Sinkformers code and FlashSinkhorn"},
       {"no-references", "", "--device cuda: skip the PyTorch and peer timings"},
       {"batch", "B", "--training: sequences per step (default 128); --device cuda: B (default 1)"},
       {"heads", "H", "--training: heads per sequence (default 4); --device cuda: H (default 32)"},
       {"load", "CKPT", "time opening a ViT checkpoint (a weights file or its folder) and running one image, next "
                        "to torch.load and model construction in PyTorch (default --repeats 3)"},
       {"json", "FILE", "also write every timing as JSON to FILE"}});
}

// File parameters the bench makes itself (deterministic, seed = position of the --op), written as .npy into
// `dir` so that the C++ operator and the reference read the same arrays: ASAP's compiled layer (L = 32 unit
// slice directions, β ~ N(0, 1/L)) unless slices+beta or a dual are given (compiled=DIR,layer=l: that layer's
// slices and β); LOT's pivots (r×d ~ N(0, 1/d))
// and mass logits (~ N(0, 1/4)) unless pivot_init=file already names them.
void addGeneratedFiles(OperatorSpec& spec, int d, const std::string& dir, int index) {
  SeededRandom random(uint64_t(1000 + index));
  auto gaussian = [&](Eigen::Index rows, Eigen::Index cols, double sd) {
    MatD m(rows, cols);
    for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = sd * random.normal();
    return m;
  };
  auto save = [&](const char* name, const MatD& m) {  // a single column is written 1-D (length-L, length-r)
    const std::string path = dir + "/op" + std::to_string(index) + "_" + name + ".npy";
    if (m.cols() == 1)
      writeNpy(path, VecD(m.col(0)));
    else
      writeNpy(path, m);
    spec.params[name] = path;
  };
  auto& p = spec.params;
  if (spec.family == "asap" && p.count("compiled")) {  // a compiled model's layer, as slices + beta files
    const CompiledAsapLayer layer = loadCompiledAsap(std::get<std::string>(p.at("compiled")))
                                        .at(int(getInt(p, "layer")));
    p.erase("compiled");
    p["layer"] = ParamValue(-1LL);
    save("slices", layer.slices);
    save("beta", MatD(layer.beta));
  }
  if (spec.family == "asap" && !p.count("dual") && !(p.count("slices") && p.count("beta"))) {
    const int L = 32;
    const MatD z = gaussian(L, d, 1.0);
    save("slices", MatD(z.rowwise().normalized()));
    save("beta", gaussian(L, 1, 1.0 / std::sqrt(double(L))));
  }
  if (spec.family == "lot" && !(getString(p, "pivot_init") == "file" && p.count("pivots"))) {
    const auto r = Eigen::Index(getInt(p, "r"));
    spec.params["pivot_init"] = std::string("file");
    save("pivots", gaussian(r, d, 1.0 / std::sqrt(double(d))));
    save("mass_logits", gaussian(r, 1, 0.5));
  }
}

// Untimed calls before the timed ones, for at least this long (and at least one): a process can run small
// parallel operations several times slower for its first fraction of a second (PyTorch's LOT reference on two
// threads took 7× its later time per call for about 0.25 s), which one warm-up call does not cover. The
// reference (scripts/reference/bench_reference.py) warms up the same way.
constexpr double kWarmUpSeconds = 0.5;

// Times the operator call only (scores, normalisations, output, its own diagnostics, and the dense plan; with
// `lazy` the output A·V alone, Operator::lazyOutput, as the reference's --lazy), after kWarmUpSeconds of untimed
// runs.
template <class T>
std::vector<double> timeOperator(const Operator& op, int n, int d, int repeats, bool lazy) {
  const AttentionInput<T> input = gaussianHead<T>(n, d, 0);
  auto once = [&] {
    if (lazy)
      (void)op.lazyOutput(input, noFeedback());
    else
      (void)op.run(input, noFeedback()).plan.dense();
  };
  const auto warmUpStart = std::chrono::steady_clock::now();
  do once();
  while (std::chrono::duration<double>(std::chrono::steady_clock::now() - warmUpStart).count() < kWarmUpSeconds);
  std::vector<double> seconds;
  for (int r = 0; r < repeats; ++r) {
    const auto start = std::chrono::steady_clock::now();
    once();
    seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return seconds;
}

// Removes the folder of generated files however the command ends.
struct TemporaryFolder {
  std::string path;
  ~TemporaryFolder() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
};

struct BenchRow {
  std::string op;        // as given on the command line
  std::string resolved;  // defaults filled and generated file paths added: what both sides ran
  int n = 0;
  std::vector<double> cppSeconds;
  std::optional<double> referenceSeconds;
  std::optional<std::string> referenceError;  // the reference ran but could not time this row: why
  // With --floor: the machine's floor measured just before and just after this row's timing; the operator's time
  // over one exp pass over the n × n scores, and, where its least work is known (least_work.h), the floor of that
  // work: its exponentials and streamed entries alone (floorSeconds), and with its products at the multiply-add
  // peak (workFloorSeconds), all at floor().
  std::vector<CpuFloor> floorsAround;
  std::optional<double> expPassEquivalents, floorSeconds, workFloorSeconds;

  // The floor the ratios use: the faster of the two around the timing (fasterOf); none without --floor.
  std::optional<CpuFloor> floor() const {
    if (floorsAround.empty()) return std::nullopt;
    return fasterOf(floorsAround.front(), floorsAround.back());
  }
};

void printTable(const std::vector<BenchRow>& rows, Precision precision) {
  size_t width = 8;
  for (const auto& row : rows) width = std::max(width, row.op.size());
  const bool floor = !rows.empty() && rows.front().expPassEquivalents;
  std::printf("%-*s %7s %12s %12s %10s", int(width), "operator", "n", "C++ ms", "torch ms", "torch/C++");
  std::printf(floor ? " %11s %11s %11s %10s\n" : "\n", "exp passes", "x floor", "x work", "exp ns");
  for (const auto& row : rows) {
    const double cpp = median(row.cppSeconds);
    std::printf("%-*s %7d %12.3f", int(width), row.op.c_str(), row.n, 1e3 * cpp);
    if (row.referenceSeconds)
      std::printf(" %12.3f %10.2f", 1e3 * *row.referenceSeconds, *row.referenceSeconds / cpp);
    else
      std::printf(" %12s %10s", "-", "-");
    if (row.expPassEquivalents) {
      std::printf(" %11.1f", *row.expPassEquivalents);
      if (row.floorSeconds)
        std::printf(" %11.2f %11.2f", cpp / *row.floorSeconds, cpp / *row.workFloorSeconds);
      else
        std::printf(" %11s %11s", "-", "-");
      const CpuFloor floor = *row.floor();
      std::printf(" %10.3f", 1e9 / (precision == Precision::F64 ? floor.expPerSecond64 : floor.expPerSecond32));
    }
    std::printf("\n");
  }
  // A "-" in the torch column says why once per operator, so a missing comparison is never silent.
  std::string explained;
  for (const auto& row : rows)
    if (row.referenceError && row.op != explained) {
      std::printf("reference could not time %s: %s\n", row.op.c_str(), row.referenceError->c_str());
      explained = row.op;
    }
}

nlohmann::json floorsJson(const std::vector<CpuFloor>& floors) {
  nlohmann::json out = nlohmann::json::array();
  for (const CpuFloor& floor : floors) out.push_back(floorJson(floor));
  return out;
}

void printFloors(const std::vector<CpuFloor>& floors) {
  for (const CpuFloor& floor : floors)
    std::printf("floor, %d thread(s): exp %.3f ns (f32), %.3f ns (f64) per element; streaming read %.1f GB/s; "
                "multiply-add peak %.0f GFLOP/s (f32), %.0f GFLOP/s (f64)\n",
                floor.threads, 1e9 / floor.expPerSecond32, 1e9 / floor.expPerSecond64,
                floor.streamBytesPerSecond / 1e9, floor.multiplyAddFlops32 / 1e9, floor.multiplyAddFlops64 / 1e9);
}

nlohmann::json benchJson(const std::vector<BenchRow>& rows, const ReferenceBenchRequest& request,
                         const ReferenceTimings& reference, const std::vector<CpuFloor>& floors) {
  nlohmann::json results = nlohmann::json::array();
  for (const auto& row : rows) {
    nlohmann::json entry = {{"op", row.op},
                            {"resolved", row.resolved},
                            {"n", row.n},
                            {"cpp_median_seconds", median(row.cppSeconds)},
                            {"cpp_seconds", row.cppSeconds}};
    if (row.referenceSeconds) {
      entry["reference_median_seconds"] = *row.referenceSeconds;
      entry["ratio_reference_over_cpp"] = *row.referenceSeconds / median(row.cppSeconds);
    }
    if (row.referenceError) entry["reference_error"] = *row.referenceError;
    if (const auto floor = row.floor()) {
      entry["floor"] = floorJson(*floor);
      entry["floor_measured"] = floorsJson(row.floorsAround);
    }
    if (row.expPassEquivalents) entry["exp_pass_equivalents"] = *row.expPassEquivalents;
    if (row.floorSeconds) {
      entry["floor_seconds"] = *row.floorSeconds;
      entry["ratio_cpp_over_floor"] = median(row.cppSeconds) / *row.floorSeconds;
      entry["work_floor_seconds"] = *row.workFloorSeconds;
      entry["ratio_cpp_over_work_floor"] = median(row.cppSeconds) / *row.workFloorSeconds;
    }
    results.push_back(entry);
  }
  nlohmann::json machine = cpuDescription();  // CPU model, its SIMD flags, the build's instruction sets
  machine["logical_cores"] = std::thread::hardware_concurrency();
  machine["cpp_threads"] = request.threads;
  machine["reference_threads"] = reference.report.value("threads", 0);
  // Both sides fault their large buffers in as huge pages when the kernel allows it, and reuse the pages of freed
  // ones (the same environment).
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  machine["huge_pages"] = {{"kernel_transparent_hugepage", transparentHugePageMode()},
                           {"cpp", "madvise(MADV_HUGEPAGE) on the n x n buffers (largeMatrix); freed buffers kept (keepFreedBuffers)"},
                           {"reference_environment", referenceEnvironment()},
                           {"glibc_tunables", tunables ? tunables : ""}};
  return {{"d", request.d},
          {"repeats", request.repeats},
          {"precision", request.precision},
          {"lazy", request.lazy},
          {"machine", machine},
          {"cpp_threads", request.threads},
          {"reference",
           {{"available", reference.available},
            {"reason", reference.reason},
            {"script", referenceScript("bench_reference.py")},
            {"report", reference.report}}},
          {"floor", floorsJson(floors)},
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
  if (cl.has("training")) return trainingBench(cl);
  if (cl.has("backward")) return backwardBench(cl);
  if (cl.has("load")) return loadBench(cl);
  if (cl.get("device").value_or("cpu") == "cuda") {
#ifdef TL_WITH_CUDA
    return gpuBench(cl);
#else
    throw Error("bench --device cuda: this TransportLens was built without CUDA (TL_CUDA=OFF)");
#endif
  }
  if (cl.get("device").value_or("cpu") != "cpu")
    throw InvalidArgument("bench: --device is cpu or cuda, not " + *cl.get("device"));
  for (const char* option : {"batch", "heads"})
    if (cl.has(option)) throw InvalidArgument(std::string("bench: --") + option + " belongs to --training");
  ReferenceBenchRequest request;
  const std::vector<std::string> labels = cl.all("op");
  const bool withFloor = cl.has("floor");
  if (labels.empty() && !withFloor)
    throw InvalidArgument("'bench' needs at least one --op, or --floor (see 'tlens bench --help')");
  request.sizes = labels.empty() ? std::vector<int>{} : parsePositiveIntList("n", cl.required("n"));
  request.d = parsePositiveInt("d", cl.get("d").value_or("64"));
  request.lazy = cl.has("lazy");
  char dirTemplate[] = "/tmp/tlens-bench-files-XXXXXX";
  if (!mkdtemp(dirTemplate)) throw InvalidArgument("bench: cannot create a temporary folder in /tmp");
  const TemporaryFolder files{dirTemplate};
  const std::string& fileDir = files.path;
  std::vector<OperatorSpec> specs;
  for (const auto& text : labels) {
    specs.push_back(OperatorRegistry::builtin().parse(text));
    addGeneratedFiles(specs.back(), request.d, fileDir, int(specs.size()));
    request.ops.push_back(specs.back().toString());
  }
  request.repeats = parsePositiveInt("repeats", cl.get("repeats").value_or("7"));
  const Precision precision = parsePrecision(cl.get("precision").value_or("f64"));
  request.precision = precisionName(precision);
  // The reference gets as many threads as the C++ path uses.
  const int threads = parsePositiveInt("threads", cl.get("threads").value_or(std::to_string(parallelThreads())));
  std::vector<CpuFloor> floors;
  if (withFloor) {
    std::cerr << "measuring the CPU floor ...\n";
    floors.push_back(measureCpuFloor(1, request.repeats));
    if (threads > 1) floors.push_back(measureCpuFloor(threads, request.repeats));
  }
  setParallelThreads(threads);
  request.threads = parallelThreads();

  std::vector<BenchRow> rows;
  for (size_t s = 0; s < specs.size(); ++s) {
    const auto op = OperatorRegistry::builtin().create(specs[s]);
    if (request.lazy && !op->structuredPlan())
      throw InvalidArgument("bench --lazy: " + labels[s] + " has no structured plan (it forms the n×n matrix)");
    for (int n : request.sizes) {
      std::cerr << "timing " << labels[s] << " at n=" << n << " ...\n";
      BenchRow row;
      row.op = labels[s];
      row.resolved = request.ops[s];
      row.n = n;
      if (withFloor) row.floorsAround.push_back(measureCpuFloor(threads, request.repeats));
      row.cppSeconds = precision == Precision::F64
                           ? timeOperator<double>(*op, n, request.d, request.repeats, request.lazy)
                           : timeOperator<float>(*op, n, request.d, request.repeats, request.lazy);
      if (withFloor) row.floorsAround.push_back(measureCpuFloor(threads, request.repeats));
      rows.push_back(std::move(row));
    }
  }
  ReferenceTimings reference;
  if (!rows.empty()) {
    std::cerr << "timing the PyTorch reference (" << referencePython() << ") ...\n";
    reference = runReferenceBench(request);
  }
  const size_t bytes = precision == Precision::F64 ? sizeof(double) : sizeof(float);
  for (size_t r = 0; r < rows.size(); ++r) {
    BenchRow& row = rows[r];
    row.referenceSeconds = reference.medianSeconds(row.resolved, row.n);
    row.referenceError = reference.rowError(row.resolved, row.n);
    const std::optional<CpuFloor> rowFloor = row.floor();  // around its timing, with the threads the operators used
    if (!rowFloor) continue;
    const CpuFloor& floor = *rowFloor;
    const double cpp = median(row.cppSeconds);
    row.expPassEquivalents = cpp / floor.expAndStreamSeconds({double(row.n) * row.n, 0, 0}, bytes);
    if (const auto work = leastWork(specs[r / request.sizes.size()], row.n, request.d)) {
      row.floorSeconds = floor.expAndStreamSeconds(*work, bytes);
      row.workFloorSeconds = *row.floorSeconds + floor.multiplyAddSeconds(work->multiplyAdds, bytes);
    }
  }

  std::printf("C++ CPU path (%s; %s): %d thread(s), %s, d=%d, median of %d runs%s\n", cpuModel().c_str(),
              Eigen::SimdInstructionSetsInUse(),
              request.threads, request.precision.c_str(), request.d, request.repeats,
              request.lazy ? ", lazy O = A·V only" : "");
  printFloors(floors);
  if (!rows.empty()) {
    if (reference.available)
      std::printf("reference: PyTorch %s, %d thread(s)\n", reference.report.value("torch", "?").c_str(),
                  reference.report.value("threads", 0));
    else
      std::printf("reference: not run (%s)\n", reference.reason.c_str());
    printTable(rows, precision);
    if (withFloor)
      std::printf("x floor, x work and exp ns: each row against the faster of two floors measured with %d thread(s) "
                  "just before and just after its timing\n", request.threads);
  }
  if (const auto file = cl.get("json"))
    writeFileAtomically(*file, benchJson(rows, request, reference, floors).dump(2) + "\n");
  return 0;
}

}  // namespace tl::cli
