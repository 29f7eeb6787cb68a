// `tlens bench --device cuda`: the CUDA backend's fused paths timed with CUDA events on device-resident
// inputs (cuda/bench_cuda.h), in float32 FMAs and on TF32 tensor cores, beside the exp-throughput floor
// measured on the same GPU, and beside the published code run in the same invocation on the same shapes:
// PyTorch SDPA, a dense PyTorch Sinkhorn, LOTFormer's factored formulation and ESPFormer's dense per-slice
// plans (scripts/reference/gpu_reference.py), the Sinkformers code and
// FlashSinkhorn (scripts/reference/gpu_peers.py, peers from $TL_PEERS_DIR). Built only with TL_CUDA.
#include "gpu_bench.h"

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <optional>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "bench_common.h"
#include "common/errors.h"
#include "cuda/bench_cuda.h"
#include "cuda/device_query.h"
#include "io/atomic_file.h"
#include "ops/asap/asap.h"
#include "ops/banded/banded.h"
#include "ops/esp/esp_device.h"
#include "ops/lot/lot.h"
#include "ops/registry.h"
#include "reference_bench.h"

namespace tl::cli {
namespace {

std::string joined(const std::vector<int>& values) {
  std::string out;
  for (int v : values) out += (out.empty() ? "" : ",") + std::to_string(v);
  return out;
}

// One JSON document from a script: a single object, or JSON Lines (one object per measurement).
nlohmann::json scriptReport(const std::string& script, const std::string& arguments) {
  const ProcessOutput run = runShell(shellQuote(referencePython()) + " " + shellQuote(referenceScript(script)) + " " +
                                     arguments);
  nlohmann::json lines = nlohmann::json::array();
  std::istringstream out(run.out);
  for (std::string line; std::getline(out, line);) {
    if (line.empty()) continue;
    try {
      lines.push_back(nlohmann::json::parse(line));
    } catch (const nlohmann::json::exception&) {
      // A multi-line JSON object: parse the whole output at once below.
      lines.clear();
      break;
    }
  }
  nlohmann::json report = {{"script", script}, {"exit_status", run.status}};
  if (!lines.empty())
    report["measurements"] = lines;
  else
    try {
      report["measurements"] = nlohmann::json::parse(run.out);
    } catch (const nlohmann::json::exception&) {
      report["measurements"] = nullptr;
    }
  if (run.status != 0) report["stderr_tail"] = run.err.size() > 2000 ? run.err.substr(run.err.size() - 2000) : run.err;
  return report;
}

// The families whose fused device path the GPU benchmark times (cuda/bench_cuda.h).
const std::set<std::string>& benchFamilies() {
  static const std::set<std::string> families = {"softmax", "sinkhorn", "esp", "lot", "asap", "diff", "banded"};
  return families;
}

// One --op at one shape: its device-resident timing and the exponentials its kernels cannot avoid (the exp
// floor): one pass over the n² scores for the one-pass softmax, T + 1 for Sinkhorn (its T half-steps and the
// output pass), T + 1 over each of LOT's two n × r problems, k + 1 for ASAP's k closures (1, 2 or 3: the
// Sinkhorn loop of the transposed problem, ops/asap/asap_device.h; the host's sliced-feature prediction of
// its start dual is not timed), one per map for diff's two half-width softmax launches, and for banded its
// 2·(base_steps + tail_steps) half-steps, the output pass and the two final-sum passes over the band's
// n(2W + 1) − W(W + 1) entries. Hard ESP has no exponentials (no floor): sorts and gathers.
struct DeviceBench {
  cuda::BenchTiming timing;
  double exponentials = 0;
};

// Hard ESP's problem for the benchmark, made on the host as for a run (ops/esp/esp_device.h).
cuda::BenchTiming benchEsp(const OperatorSpec& op, const cuda::BenchShape& shape, int repeats) {
  const EspParams p = EspParams::from(op.params);
  if (p.sort != SortMode::Hard)
    throw InvalidArgument("bench --device cuda: times esp with sort=hard only (the soft path has no benchmark yet)");
  const MatF theta = sliceDirections(p.slices, shape.d).cast<float>();
  cuda::EspCudaProblem problem = espDeviceProblem(p, shape.n, shape.n);
  problem.L = int(theta.rows());
  problem.directions = theta.data();
  cuda::EspCudaOptions options;
  options.weights = [&](const std::vector<float>& costs) { return espDeviceWeights(p, costs); };
  return cuda::benchEsp(shape, std::move(problem), options, 1, repeats);
}

DeviceBench benchOnDevice(const OperatorSpec& op, cuda::BenchShape shape, int repeats) {
  const double heads = double(shape.B) * shape.H, n = shape.n;
  if (op.family == "esp") return {benchEsp(op, shape, repeats), 0};
  if (op.family == "softmax") return {cuda::benchSoftmax(shape, 1, repeats), heads * n * n};
  if (op.family == "diff") {
    shape.d /= 2;
    const cuda::BenchTiming a = cuda::benchSoftmax(shape, 1, repeats), b = cuda::benchSoftmax(shape, 1, repeats);
    return {{a.medianMs + b.medianMs, a.minMs + b.minMs, std::min(a.repeats, b.repeats)}, 2 * heads * n * n};
  }
  shape.eps = getReal(op.params, "eps");
  if (op.family == "banded") {
    const BandedParams p = BandedParams::from(op.params);
    if (p.dustbin) throw InvalidArgument("bench --device cuda: banded is timed without a dustbin (dustbin=false)");
    const double W = std::min<double>(p.W, n - 1), support = n * (2 * W + 1) - W * (W + 1);
    return {cuda::benchBanded(shape, p.W, p.baseSteps, p.tailSteps, 1, repeats), (p.budget() + 3) * heads * support};
  }
  if (op.family == "asap") {
    shape.T = asapClosures(parseAsapVariant(getString(op.params, "variant")), parseClosing(getString(op.params, "closing")));
    return {cuda::benchSinkhorn(shape, 1, repeats), (shape.T + 1) * heads * n * n};
  }
  shape.T = int(getInt(op.params, "T"));
  if (op.family == "lot") {
    const int r = LotParams::from(op.params).r;  // a pivots file sets r to its rows
    return {cuda::benchLot(shape, r, 1, repeats), (shape.T + 1) * 2 * heads * n * r};
  }
  return {cuda::benchSinkhorn(shape, 1, repeats), (shape.T + 1) * heads * n * n};
}

nlohmann::json timingJson(const cuda::BenchTiming& t, double floorMs) {
  const nlohmann::json overFloor = floorMs > 0 ? nlohmann::json(t.medianMs / floorMs) : nlohmann::json(nullptr);
  return {{"median_ms", t.medianMs}, {"min_ms", t.minMs}, {"repeats", t.repeats}, {"over_exp_floor", overFloor}};
}

}  // namespace

int gpuBench(const CommandLine& cl) {
  const cuda::DeviceInfo device = cuda::deviceInfo(0);
  if (!device.available) throw ResourceError("bench --device cuda: no usable CUDA device (" + device.status + ")");
  const std::vector<int> sizes = parsePositiveIntList("n", cl.get("n").value_or("1024,4096,16384,65536"));
  cuda::BenchShape shape;
  shape.B = parsePositiveInt("batch", cl.get("batch").value_or("1"));
  shape.H = parsePositiveInt("heads", cl.get("heads").value_or("32"));
  shape.d = parsePositiveInt("d", cl.get("d").value_or("64"));
  const int repeats = parsePositiveInt("repeats", cl.get("repeats").value_or("5"));
  std::vector<OperatorSpec> ops;
  for (const auto& text : cl.all("op")) {
    const OperatorSpec given = OperatorRegistry::builtin().parse(text);
    ops.push_back(OperatorRegistry::builtin().resolve(given.family, given.params));  // with the defaults
    if (!benchFamilies().count(ops.back().family)) {
      std::string names;
      for (const auto& f : benchFamilies()) names += (names.empty() ? "" : ", ") + f;
      throw InvalidArgument("bench --device cuda: " + ops.back().family + " has no CUDA benchmark (families with one: " +
                            names + ")");
    }
  }
  if (ops.empty()) throw InvalidArgument("'bench' needs at least one --op (see 'tlens bench --help')");

  std::cerr << "measuring the exp throughput of " << device.name << " ...\n";
  const cuda::ExpThroughput exp = cuda::measureExpThroughput(0);
  nlohmann::json runs = nlohmann::json::array();
  int sinkhornT = 10;
  std::optional<OperatorSpec> lot;  // the LOT op whose shape the LOTFormer reference gets
  std::optional<OperatorSpec> esp;  // the ESP op whose slices the ESPFormer formulation gets
  std::printf("%s: expf %.3g/s; B=%d H=%d d=%d, CUDA events, median of up to %d runs\n", device.name.c_str(),
              exp.accuratePerSecond, shape.B, shape.H, shape.d, repeats);
  std::printf("%-28s %7s %12s %12s %14s\n", "operator", "n", "fp32 ms", "tf32 ms", "exp floor ms");
  for (const OperatorSpec& op : ops) {
    if (op.family == "sinkhorn") sinkhornT = int(getInt(op.params, "T"));
    if (op.family == "lot") lot = op;
    if (op.family == "esp") esp = op;
    for (int n : sizes) {
      shape.n = n;
      nlohmann::json entry = {{"op", op.toString()}, {"B", shape.B}, {"H", shape.H}, {"n", n}, {"d", shape.d}};
      double ms[2] = {0, 0}, floorMs = 0;
      // Banded and ESP have no TF32 kernels.
      const int precisions = op.family == "banded" || op.family == "esp" ? 1 : 2;
      for (int tf32 = 0; tf32 < precisions; ++tf32) {
        std::cerr << "timing " << op.toString() << " at n=" << n << (tf32 ? " (tf32)" : " (fp32)") << " ...\n";
        shape.tf32 = tf32 == 1;
        const DeviceBench b = benchOnDevice(op, shape, repeats);
        floorMs = b.exponentials / exp.accuratePerSecond * 1e3;  // the exponentials alone at the measured rate
        entry[tf32 ? "tf32" : "fp32"] = timingJson(b.timing, floorMs);
        ms[tf32] = b.timing.medianMs;
      }
      entry["exp_floor_ms"] = floorMs > 0 ? nlohmann::json(floorMs) : nlohmann::json(nullptr);
      if (precisions == 1) {
        entry["tf32"] = nullptr;
        std::printf("%-28s %7d %12.3f %12s %14s\n", op.toString().c_str(), n, ms[0], "-",
                    floorMs > 0 ? std::to_string(floorMs).c_str() : "-");
      } else {
        std::printf("%-28s %7d %12.3f %12.3f %14.3f\n", op.toString().c_str(), n, ms[0], ms[1], floorMs);
      }
      std::fflush(stdout);
      runs.push_back(entry);
    }
  }

  nlohmann::json references = nlohmann::json::object();
  if (!cl.has("no-references")) {
    const std::string shapeArgs =
        "--n " + joined(sizes) + " --H " + std::to_string(shape.B * shape.H) + " --d " + std::to_string(shape.d);
    std::cerr << "timing PyTorch SDPA, a dense PyTorch Sinkhorn" << (lot ? ", the LOTFormer formulation" : "")
              << (esp ? ", the ESPFormer formulation" : "") << " ("
              << referencePython() << ") ...\n";
    std::string lotArgs;
    if (lot)
      lotArgs = " --lot-r " + std::to_string(LotParams::from(lot->params).r) + " --lot-T " +
                std::to_string(getInt(lot->params, "T")) + " --lot-eps " + std::to_string(getReal(lot->params, "eps"));
    std::string espArgs;
    if (esp) {
      const EspParams p = EspParams::from(esp->params);
      espArgs = " --esp-L " + std::to_string(sliceDirections(p.slices, shape.d).rows()) + " --esp-tau " +
                std::to_string(p.tau);
    }
    references["pytorch"] =
        scriptReport("gpu_reference.py", shapeArgs + " --T " + std::to_string(sinkhornT) + lotArgs + espArgs);
    std::cerr << "timing the published peers (Sinkformers, FlashSinkhorn) ...\n";
    references["peers"] = scriptReport("gpu_peers.py", shapeArgs);
  }
  const nlohmann::json report = {
      {"device", nlohmann::json::parse(device.toJson())},
      {"exp", {{"expf_per_s", exp.accuratePerSecond}, {"fast_expf_per_s", exp.fastPerSecond}}},
      {"note", "fp32 = float32 FMAs for the score tiles (the default, what the equivalence suite checks); tf32 = "
               "TF32 tensor cores (mma.sync m16n8k8) for the score and P·V tiles. Inputs on the device, upload and "
               "download excluded. The exp floor is the time the exponentials alone take at the measured expf rate."},
      {"runs", runs},
      {"references", references}};
  if (const auto file = cl.get("json")) writeFileAtomically(*file, report.dump(2) + "\n");
  return 0;
}

}  // namespace tl::cli
