// docs/operators/asap.md#feature-families. The sliced potentials themselves live in sliced_potentials.cpp.
#include "ops/asap/feature_families.h"

#include <cmath>
#include <functional>
#include <vector>

#include "common/errors.h"
#include "common/parallel.h"
#include "ops/asap/sliced_potentials.h"

namespace tl {
namespace {

// One slice's values: on the active tokens (from the active projections x, y) and on the padded points z.
using SliceValues = std::function<void(const Vec<double>& x, const Vec<double>& y, const Vec<double>& z,
                                       Vec<double>& onActive, Vec<double>& onPadded)>;

// The projections along every slice (eq. 11: x = <θ, q>/d^{1/4}) and each slice's values from `values`, on the
// query rows (ofKeys false) or the key rows (true), centred over the active rows. The slices are independent:
// split across threads, each writing its own columns.
MatD perSlice(const MatD& Q, const MatD& K, const MatD& slices, const std::optional<Mask>& activeTokens,
              bool ofKeys, const SliceValues& values) {
  const double scale = 1.0 / std::pow(double(Q.cols()), 0.25);
  const MatD X = (Q * slices.transpose()) * scale;
  const MatD Y = (K * slices.transpose()) * scale;
  const MatD& rowsOf = ofKeys ? Y : X;
  std::vector<Eigen::Index> active, padded;
  for (Eigen::Index i = 0; i < rowsOf.rows(); ++i)
    ((!activeTokens || (*activeTokens)(i)) ? active : padded).push_back(i);
  auto gather = [](const MatD& M, const std::vector<Eigen::Index>& rows, Eigen::Index l) {
    Vec<double> out(Eigen::Index(rows.size()));
    for (size_t r = 0; r < rows.size(); ++r) out(Eigen::Index(r)) = M(rows[r], l);
    return out;
  };
  MatD out(rowsOf.rows(), slices.rows());
  const double tokens = double(Q.rows() + K.rows()), sortWork = 8 * tokens * std::log2(tokens + 2);
  parallelFor(slices.rows(), double(slices.rows()) * sortWork, [&](Eigen::Index first, Eigen::Index end) {
    for (Eigen::Index l = first; l < end; ++l) {
      const Vec<double> x = activeTokens ? gather(X, active, l) : Vec<double>(X.col(l));
      const Vec<double> y = activeTokens ? gather(Y, active, l) : Vec<double>(Y.col(l));
      Vec<double> onActive, onPadded;
      values(x, y, gather(rowsOf, padded, l), onActive, onPadded);
      const double mean = onActive.mean();
      for (size_t a = 0; a < active.size(); ++a) out(active[a], l) = onActive(Eigen::Index(a)) - mean;
      for (size_t p = 0; p < padded.size(); ++p) out(padded[p], l) = onPadded(Eigen::Index(p)) - mean;
    }
  });
  return out;
}

}  // namespace

AsapFeatures parseAsapFeatures(const std::string& text) {
  if (text == "potentials") return AsapFeatures::Potentials;
  if (text == "raw") return AsapFeatures::Raw;
  if (text == "rank-displacement") return AsapFeatures::RankDisplacement;
  if (text == "predict-both") return AsapFeatures::PredictBoth;
  throw InvalidArgument("features = '" + text + "' is not valid; expected potentials, raw, rank-displacement or "
                        "predict-both");
}

const char* asapFeaturesName(AsapFeatures features) {
  switch (features) {
    case AsapFeatures::Raw: return "raw";
    case AsapFeatures::RankDisplacement: return "rank-displacement";
    case AsapFeatures::PredictBoth: return "predict-both";
    case AsapFeatures::Potentials: break;
  }
  return "potentials";
}

MatD sourceFeatures(const MatD& Q, const MatD& K, const MatD& slices, const std::optional<Mask>& activeTokens,
                    AsapFeatures features) {
  switch (features) {
    case AsapFeatures::Raw:
      return perSlice(Q, K, slices, activeTokens, false,
                      [](const Vec<double>& x, const Vec<double>&, const Vec<double>& z, Vec<double>& onActive,
                         Vec<double>& onPadded) {
                        onActive = x;
                        onPadded = z;
                      });
    case AsapFeatures::RankDisplacement:
      return perSlice(Q, K, slices, activeTokens, false,
                      [](const Vec<double>& x, const Vec<double>& y, const Vec<double>& z, Vec<double>& onActive,
                         Vec<double>& onPadded) {
                        onActive = monotoneMapAt(x, y, x) - x;
                        onPadded = monotoneMapAt(x, y, z) - z;
                      });
    case AsapFeatures::Potentials:
    case AsapFeatures::PredictBoth: break;
  }
  return slicedFeatures(Q, K, slices, activeTokens);
}

MatD keyPotentialFeatures(const MatD& Q, const MatD& K, const MatD& slices, const std::optional<Mask>& activeTokens) {
  if (Q.rows() != K.rows())
    throw InvalidArgument("asap: features=predict-both needs as many keys as queries (the key potential is defined "
                          "on the square matching); got " + std::to_string(Q.rows()) + " queries and " +
                          std::to_string(K.rows()) + " keys");
  MatD psi = perSlice(Q, K, slices, activeTokens, true,
                      [](const Vec<double>& x, const Vec<double>& y, const Vec<double>& z, Vec<double>& onActive,
                         Vec<double>& onPadded) {
                        onActive = potential1D(x, y).g;
                        onPadded = Vec<double>::Zero(z.size());
                      });
  if (activeTokens)  // padded keys: 0 rather than 0 − mean (their column of the plan is 0 anyway)
    for (Eigen::Index j = 0; j < psi.rows(); ++j)
      if (!(*activeTokens)(j)) psi.row(j).setZero();
  return psi;
}

}  // namespace tl
