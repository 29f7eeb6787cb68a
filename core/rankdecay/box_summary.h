#pragma once
// Five-number summaries as box plots draw them (the seaborn/matplotlib default the paper's figures use).
#include <vector>

namespace tl::rankdecay {

struct BoxSummary {
  double median = 0, q1 = 0, q3 = 0;
  // Whiskers: the most extreme values within 1.5·IQR of the box; values beyond them are outliers.
  double whiskerLow = 0, whiskerHigh = 0;
  double min = 0, max = 0;
};

// Quartiles interpolate linearly between order statistics (NumPy's default). Empty input gives zeros.
BoxSummary summarise(std::vector<double> values);

// Mean and (population) standard deviation; `log10` first maps every value to log10(max(v, 1e-320)),
// for bands drawn on a log axis (a linear mean ± std of values spanning decades goes negative).
struct MeanStd {
  double mean = 0, std = 0;
};
MeanStd meanStd(const std::vector<double>& values, bool log10 = false);

double median(std::vector<double> values);

}  // namespace tl::rankdecay
