#include "rankdecay/path_sampler.h"

#include <algorithm>
#include <atomic>
#include <numeric>
#include <string>

#include "common/errors.h"
#include "common/parallel.h"
#include "rankdecay/residual.h"

namespace tl::rankdecay {

int uniformIndex(SeededRandom& rng, int count) { return std::min(count - 1, int(rng.uniform() * count)); }

std::vector<int> distinctSorted(SeededRandom& rng, int count, int range) {
  std::vector<int> pool(static_cast<size_t>(range));
  std::iota(pool.begin(), pool.end(), 0);
  for (int i = 0; i < count; ++i) std::swap(pool[size_t(i)], pool[size_t(i + uniformIndex(rng, range - i))]);
  pool.resize(size_t(count));
  std::sort(pool.begin(), pool.end());
  return pool;
}

SampledPath samplePath(SeededRandom& rng, int t, int layers, int samples, int heads, bool samplePerLayer) {
  SampledPath path;
  path.layers = distinctSorted(rng, t, layers);
  if (samplePerLayer) {
    for (int i = 0; i < t; ++i) path.samples.push_back(uniformIndex(rng, samples));
  } else {
    path.samples.assign(size_t(t), uniformIndex(rng, samples));
  }
  for (int i = 0; i < t; ++i) path.heads.push_back(uniformIndex(rng, heads));
  return path;
}

MatD pathProduct(const AttentionRecord& record, const SampledPath& path, ProductOrder order) {
  const size_t t = path.layers.size();
  auto factor = [&](size_t i) -> const MatD& {
    return record.at(path.layers[i], path.samples[i], path.heads[i]);
  };
  MatD product = factor(0);
  if (order == ProductOrder::Literal) {
    for (size_t i = 1; i < t; ++i) product = product * factor(i);  // right-multiply: P^{ℓ1} ⋯ P^{ℓt}
  } else {
    for (size_t i = 1; i < t; ++i) product = factor(i) * product;  // left-multiply: P^{ℓt} ⋯ P^{ℓ1}
  }
  return product;
}

namespace {

void checkRecord(const AttentionRecord& record, const PathOptions& options) {
  if (record.layers < 1 || record.samples < 1 || record.heads < 1)
    throw InvalidArgument("rank decay: the source recorded no attention (layers, samples and heads must be ≥ 1)");
  if (options.paths < 1) throw InvalidArgument("rank decay: paths must be ≥ 1");
  if (!options.samplePerLayer) return;
  const Eigen::Index n = record.at(0, 0, 0).rows();
  for (int b = 1; b < record.samples; ++b)
    if (record.at(0, b, 0).rows() != n)
      throw InvalidArgument("rank decay: a sample per layer needs samples of equal length (sample " +
                            std::to_string(b) + " has " + std::to_string(record.at(0, b, 0).rows()) +
                            " tokens, sample 0 has " + std::to_string(n) + "); use one sample per path");
}

}  // namespace

std::vector<DepthSummary> sampleAttentionPaths(const AttentionRecord& record, const PathOptions& options,
                                               Feedback& feedback) {
  checkRecord(record, options);
  // Every path is drawn first, depth by depth, in the generator's fixed order; the products and their
  // σ₂/σ₁ then run in parallel, each path writing its own slot, so the values do not depend on the thread
  // count.
  SeededRandom rng(options.seed);
  const size_t perDepth = size_t(options.paths);
  std::vector<SampledPath> paths;
  for (int t = 1; t <= record.layers; ++t)
    for (size_t rep = 0; rep < perDepth; ++rep)
      paths.push_back(samplePath(rng, t, record.layers, record.samples, record.heads, options.samplePerLayer));

  std::vector<double> values(paths.size());
  std::atomic<size_t> finished{0};
  parallelForEach(Eigen::Index(paths.size()), [&](Eigen::Index i) {
    feedback.throwIfCanceled();
    values[size_t(i)] = sigmaRatio(pathProduct(record, paths[size_t(i)], options.order));
    const size_t done = ++finished;
    if (done % perDepth == 0)
      feedback.setProgress(double(done) / double(paths.size()), "paths " + std::to_string(done) + "/" +
                                                                    std::to_string(paths.size()));
  });

  std::vector<DepthSummary> depths;
  for (int t = 1; t <= record.layers; ++t) {
    DepthSummary depth;
    depth.t = t;
    const size_t first = size_t(t - 1) * perDepth;
    depth.values.assign(values.begin() + long(first), values.begin() + long(first + perDepth));
    for (size_t p = first; p < first + perDepth; ++p)
      for (size_t i = 0; i < paths[p].layers.size(); ++i) {
        const MarginalErrors& e = record.errors[record.index(paths[p].layers[i], paths[p].samples[i], paths[p].heads[i])];
        depth.factorMarginalError = std::max({depth.factorMarginalError, e.rowMax, e.colMax});
      }
    depth.box = summarise(depth.values);
    depths.push_back(std::move(depth));
  }
  return depths;
}

}  // namespace tl::rankdecay
