#include "rankdecay/layer_statistics.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "analysis/plan_stats.h"
#include "analysis/rank.h"
#include "common/parallel.h"
#include "rankdecay/residual.h"

namespace tl::rankdecay {

std::vector<LayerSummary> outputStatistics(const AttentionRecord& record, Feedback& feedback) {
  std::vector<LayerSummary> layers;
  if (record.outputs.empty() || record.outputs[0].empty()) return layers;
  const int count = int(record.outputs[0].size());
  layers.resize(size_t(count));
  feedback.setProgress(0, "outputs per layer");
  parallelForEach(count, [&](Eigen::Index l) {  // each layer fills its own slot
    feedback.throwIfCanceled();
    LayerSummary& s = layers[size_t(l)];
    s.layer = int(l);
    for (const auto& sample : record.outputs) {
      const MatD& X = sample[size_t(l)];
      const double residual = spectralNorm(meanResidual(X)), norm = spectralNorm(X);
      s.res.push_back(residual);
      s.rho.push_back(norm > 0 ? residual / norm : 0.0);
    }
    s.median = median(s.rho);
    const MeanStd linear = meanStd(s.rho);
    s.mean = linear.mean;
    s.std = linear.std;
    s.log10Rho = meanStd(s.rho, /*log10=*/true);
    s.resMedian = median(s.res);
  });
  return layers;
}

std::vector<AttentionLayerStats> attentionStatistics(const AttentionRecord& record, Feedback& feedback) {
  std::vector<AttentionLayerStats> layers(size_t(std::max(record.layers, 0)));
  parallelForEach(record.layers, [&](Eigen::Index l) {  // each layer fills its own slot
    feedback.throwIfCanceled();
    AttentionLayerStats& s = layers[size_t(l)];
    s.layer = int(l) + 1;
    int count = 0;
    for (int b = 0; b < record.samples; ++b)
      for (int h = 0; h < record.heads; ++h) {
        const MatD& P = record.at(l, b, h);
        const MarginalErrors& e = record.errors[record.index(l, b, h)];
        s.rowErrorMax = std::max(s.rowErrorMax, e.rowMax);
        s.colErrorMax = std::max(s.colErrorMax, e.colMax);
        s.entropy += rowEntropy(P).mean / std::log(double(std::max<Eigen::Index>(P.cols(), 2)));
        s.effectiveRank += planRank(P).effective;
        ++count;
      }
    s.entropy /= count;
    s.effectiveRank /= count;
  });
  return layers;
}

}  // namespace tl::rankdecay
