// tl_cuda_bench: JSON timings of the CUDA backend's fused paths, for one GPU run.
//   tl_cuda_bench [--n 1024,4096,16384,65536] [--B 1] [--H 32] [--d 64] [--T 10] [--eps 1] [--repeats 3]
//                 [--precisions fp32,tf32]
// Prints one JSON object: the device, the exp throughput, and per n the median time of the Sinkhorn fused
// output path and of the one-pass softmax, in each precision of the tile products (fp32: float32 FMAs, the
// default; tf32: TF32 tensor cores, CudaOptions::tf32), beside their exp floors (the time the exponentials
// alone take at the measured expf rate: T + 1 evaluations of every score for Sinkhorn, T half-steps plus the
// output pass; one for softmax). Keys: sinkhorn_ms / softmax_ms (fp32, as before), sinkhorn_tf32_ms /
// softmax_tf32_ms, each with _min_ms, _repeats and _over_floor, and the tf32 speed-ups over fp32. Flushed
// after every n. Exits 1 without a GPU.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <sstream>
#include <string>
#include <vector>

#include "cuda/bench_cuda.h"
#include "cuda/device_query.h"

namespace {

std::vector<int> parseList(const char* text) {
  std::vector<int> values;
  std::stringstream s(text);
  std::string item;
  while (std::getline(s, item, ',')) values.push_back(std::atoi(item.c_str()));
  return values;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace tl::cuda;
  std::vector<int> ns = {1024, 4096, 16384, 65536};
  BenchShape shape;
  int repeats = 3;
  bool fp32 = true, tf32 = true;
  for (int a = 1; a + 1 < argc; a += 2) {
    const std::string key = argv[a];
    const char* value = argv[a + 1];
    if (key == "--n") ns = parseList(value);
    else if (key == "--B") shape.B = std::atoi(value);
    else if (key == "--H") shape.H = std::atoi(value);
    else if (key == "--d") shape.d = std::atoi(value);
    else if (key == "--T") shape.T = std::atoi(value);
    else if (key == "--eps") shape.eps = std::atof(value);
    else if (key == "--repeats") repeats = std::atoi(value);
    else if (key == "--precisions") {
      const std::string list = value;
      fp32 = list.find("fp32") != std::string::npos;
      tf32 = list.find("tf32") != std::string::npos;
    }
    else {
      std::fprintf(stderr, "tl_cuda_bench: unknown option %s\n", key.c_str());
      return 2;
    }
  }
  const DeviceInfo info = deviceInfo(0);
  if (!info.available) {
    std::fprintf(stderr, "tl_cuda_bench: no CUDA device (%s)\n", info.status.c_str());
    return 1;
  }
  try {
    const ExpThroughput exp = measureExpThroughput(0);
    std::printf("{\n  \"device\": %s,\n", info.toJson().c_str());
    std::printf("  \"exp\": {\"expf_per_s\": %.4g, \"fast_expf_per_s\": %.4g},\n", exp.accuratePerSecond,
                exp.fastPerSecond);
    std::printf("  \"runs\": [");
    for (size_t i = 0; i < ns.size(); ++i) {
      shape.n = ns[i];
      const double entries = double(shape.B) * shape.H * double(shape.n) * shape.n;
      const double sinkFloor = (shape.T + 1) * entries / exp.accuratePerSecond * 1e3;
      const double softFloor = entries / exp.accuratePerSecond * 1e3;
      std::printf("%s\n    {\"B\": %d, \"H\": %d, \"n\": %d, \"d\": %d, \"T\": %d, \"eps\": %g,", i ? "," : "", shape.B,
                  shape.H, shape.n, shape.d, shape.T, shape.eps);
      std::printf(" \"sinkhorn_exp_floor_ms\": %.4g, \"softmax_exp_floor_ms\": %.4g", sinkFloor, softFloor);
      // One family in one precision: "<family><suffix>_ms" and friends.
      const auto report = [&](const char* family, const char* suffix, const BenchTiming& t, double floor) {
        std::printf(", \"%s%s_ms\": %.4g, \"%s%s_min_ms\": %.4g, \"%s%s_repeats\": %d, \"%s%s_over_floor\": %.3g", family,
                    suffix, t.medianMs, family, suffix, t.minMs, family, suffix, t.repeats, family, suffix,
                    t.medianMs / floor);
      };
      BenchTiming sink[2], soft[2];
      for (int precision = 0; precision < 2; ++precision) {
        if (precision == 0 ? !fp32 : !tf32) continue;
        shape.tf32 = precision == 1;
        const char* suffix = shape.tf32 ? "_tf32" : "";
        sink[precision] = benchSinkhorn(shape, 1, repeats);
        report("sinkhorn", suffix, sink[precision], sinkFloor);
        soft[precision] = benchSoftmax(shape, 1, repeats);
        report("softmax", suffix, soft[precision], softFloor);
      }
      if (fp32 && tf32)
        std::printf(", \"sinkhorn_tf32_speedup\": %.3g, \"softmax_tf32_speedup\": %.3g",
                    sink[0].medianMs / sink[1].medianMs, soft[0].medianMs / soft[1].medianMs);
      std::printf("}");
      std::fflush(stdout);
    }
    std::printf("\n  ]\n}\n");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tl_cuda_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
