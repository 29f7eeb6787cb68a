#include "rankdecay/box_summary.h"

#include <algorithm>
#include <cmath>

namespace tl::rankdecay {
namespace {

// Quantile q of sorted values, linear interpolation between order statistics.
double quantile(const std::vector<double>& sorted, double q) {
  const double position = q * double(sorted.size() - 1);
  const size_t below = size_t(std::floor(position));
  const size_t above = std::min(below + 1, sorted.size() - 1);
  const double weight = position - double(below);
  return sorted[below] + weight * (sorted[above] - sorted[below]);
}

}  // namespace

BoxSummary summarise(std::vector<double> values) {
  BoxSummary box;
  if (values.empty()) return box;
  std::sort(values.begin(), values.end());
  box.min = values.front();
  box.max = values.back();
  box.median = quantile(values, 0.5);
  box.q1 = quantile(values, 0.25);
  box.q3 = quantile(values, 0.75);
  const double reach = 1.5 * (box.q3 - box.q1);
  box.whiskerLow = *std::lower_bound(values.begin(), values.end(), box.q1 - reach);
  box.whiskerHigh = *(std::upper_bound(values.begin(), values.end(), box.q3 + reach) - 1);
  return box;
}

MeanStd meanStd(const std::vector<double>& values, bool log10) {
  MeanStd out;
  if (values.empty()) return out;
  std::vector<double> v = values;
  if (log10)
    for (double& x : v) x = std::log10(std::max(x, 1e-320));
  for (double x : v) out.mean += x;
  out.mean /= double(v.size());
  for (double x : v) out.std += (x - out.mean) * (x - out.mean);
  out.std = std::sqrt(out.std / double(v.size()));
  return out;
}

double median(std::vector<double> values) { return summarise(std::move(values)).median; }

}  // namespace tl::rankdecay
