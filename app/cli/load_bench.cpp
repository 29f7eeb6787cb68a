#include "load_bench.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>
#include <thread>

#include <nlohmann/json.hpp>

#include "bench_common.h"
#include "common/errors.h"
#include "data/random.h"
#include "io/atomic_file.h"
#include "model/training/vit_training.h"
#include "model/vit_inference.h"
#include "reference_bench.h"
#include "vit/weight_names.h"

namespace tl::cli {
namespace {

namespace fs = std::filesystem;

// The weights file both sides read: a folder means its model.safetensors, else its pytorch_model.bin, as
// readVitCheckpoint chooses.
std::string weightsFile(const std::string& checkpoint) {
  if (!fs::exists(checkpoint)) throw FileError(checkpoint + ": no such file or folder");
  if (!fs::is_directory(checkpoint)) return checkpoint;
  for (const char* name : {"model.safetensors", "pytorch_model.bin"})
    if (fs::exists(fs::path(checkpoint) / name)) return (fs::path(checkpoint) / name).string();
  throw FileError(checkpoint + ": no model.safetensors (nor pytorch_model.bin) in this folder");
}

template <class F>
double seconds(F&& f) {
  const auto start = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// C×H×W pixels uniform in [0, 1], the model's input size.
HostTensor randomImage(const VitConfig& c) {
  SeededRandom random(0);
  HostTensor image;
  image.shape = {c.numChannels, c.imageSize, c.imageSize};
  image.values.resize(size_t(c.numChannels * c.imageSize * c.imageSize));
  for (float& v : image.values) v = float(random.uniform());
  return image;
}

int64_t parameterCount(const VitConfig& config) {
  int64_t total = 0;
  for (const auto& [name, shape] : vitTensorShapes(config)) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    total += n;
  }
  return total;
}

struct CppTimes {
  std::vector<double> load, forward, tracedRun;
};

}  // namespace

int loadBench(const CommandLine& cl) {
  for (const char* option :
       {"op", "n", "d", "lazy", "training", "precision", "batch", "heads", "device", "no-references"})
    if (cl.has(option))
      throw InvalidArgument(std::string("bench --load: --") + option + " belongs to the operator benchmarks");
  const std::string checkpoint = *cl.get("load");
  const std::string weights = weightsFile(checkpoint);
  const int repeats = parsePositiveInt("repeats", cl.get("repeats").value_or("3"));
  const int threads = useTorchThreads(0);

  std::cerr << "opening " << weights << " (one untimed warm-up, then " << repeats << " timed) ...\n";
  const VitConfig config = VitRunner::open(weights).config();
  const HostTensor image = randomImage(config);
  CppTimes cpp;
  for (int r = 0; r < repeats; ++r) {
    std::optional<VitRunner> runner;
    cpp.load.push_back(seconds([&] { runner.emplace(VitRunner::open(weights)); }));
    cpp.forward.push_back(seconds([&] { (void)runner->logits(image); }));
    cpp.tracedRun.push_back(seconds([&] { (void)runner->run(image); }));
  }
  std::cerr << "timing the PyTorch side (" << referencePython() << ") ...\n";
  const ReferenceTimings reference =
      runReferenceScript("load_reference.py", "--checkpoint " + shellQuote(weights) + " --repeats " +
                                                  std::to_string(repeats) + " --threads " + std::to_string(threads));

  const double bytes = double(fs::file_size(weights));
  const double load = median(cpp.load), forward = median(cpp.forward);
  std::printf("opening %s (%.0f MB, %.1fM parameters) on %s, %d thread(s), median of %d\n", weights.c_str(),
              bytes / 1e6, double(parameterCount(config)) / 1e6, cpuModel().c_str(), threads, repeats);
  std::printf("%-34s %10s %10s %10s\n", "", "C++ s", "torch s", "C++/torch");
  auto row = [&](const char* what, double mine, const char* key) {
    std::printf("%-34s %10.3f", what, mine);
    if (reference.available && reference.report.contains(key)) {
      const double theirs = reference.report[key].get<double>();
      std::printf(" %10.3f %10.2f\n", theirs, mine / theirs);
    } else {
      std::printf(" %10s %10s\n", "-", "-");
    }
  };
  row("load (read weights, build model)", load, "load_median_seconds");
  row("one image (logits)", forward, "forward_median_seconds");
  row("one image with every head traced", median(cpp.tracedRun), "");
  if (!reference.available) std::printf("reference: not run (%s)\n", reference.reason.c_str());

  if (const auto file = cl.get("json")) {
    nlohmann::json out = {
        {"mode", "load"},
        {"checkpoint", weights},
        {"bytes", bytes},
        {"parameters", parameterCount(config)},
        {"repeats", repeats},
        {"machine", {{"cpu_model", cpuModel()}, {"logical_cores", std::thread::hardware_concurrency()}, {"threads", threads}}},
        {"cpp",
         {{"load_seconds", cpp.load},
          {"load_median_seconds", load},
          {"forward_seconds", cpp.forward},
          {"forward_median_seconds", forward},
          {"traced_run_seconds", cpp.tracedRun},
          {"traced_run_median_seconds", median(cpp.tracedRun)}}},
        {"reference",
         {{"available", reference.available},
          {"reason", reference.reason},
          {"script", referenceScript("load_reference.py")},
          {"report", reference.report}}}};
    if (reference.available) {
      out["ratio_cpp_over_reference_load"] = load / reference.report["load_median_seconds"].get<double>();
      out["ratio_cpp_over_reference_forward"] = forward / reference.report["forward_median_seconds"].get<double>();
    }
    writeFileAtomically(*file, out.dump(2) + "\n");
  }
  return 0;
}

}  // namespace tl::cli
