#include "ops/esp/esp_result.h"

#include <cmath>
#include <memory>

#include "common/parallel.h"
#include "ops/esp/esp.h"
#include "ops/esp/sliced_plan.h"
#include "ops/marginals.h"
#include "ops/subsequence.h"

namespace tl {
namespace {

template <class T>
Mat<T> matchingsMatrix(const std::vector<HardSlice>& slices, Eigen::Index nq) {
  const auto L = Eigen::Index(slices.size());
  Mat<T> m(L, nq);
  parallelFor(L, double(L) * double(nq), [&](Eigen::Index first, Eigen::Index end) {
    for (Eigen::Index l = first; l < end; ++l)
      for (Eigen::Index i = 0; i < nq; ++i) m(l, i) = T(slices[size_t(l)].matching[size_t(i)]);
  });
  return m;
}

template <class T>
Mat<T> tieCounts(const std::vector<HardSlice>& slices) {
  Mat<T> m(Eigen::Index(slices.size()), 1);
  for (size_t l = 0; l < slices.size(); ++l) m(Eigen::Index(l), 0) = T(slices[l].tiedTokens);
  return m;
}

}  // namespace

template <class T>
std::pair<Mat<T>, Mat<T>> espQueriesAndKeys(const AttentionInput<T>& in, const EspParams& p) {
  if (p.compat == EspCompat::Paper) return {in.Q, in.K};
  const T scale = T(1.0 / std::sqrt(double(in.Q.cols())));
  return {in.Q * scale, in.K * scale};
}

template <class T>
void setEspTargetsAndErrors(PlanResult<T>& r) {
  const Eigen::Index nq = r.plan.rows(), nk = r.plan.cols();
  r.rowTarget = Vec<T>::Ones(nq);
  r.colTarget = Vec<T>::Constant(nk, T(nq) / T(nk));
  r.errors = marginalErrorsFromSums<T>(r.plan.rowSums(), r.rowTarget, r.plan.colSums(), r.colTarget);
  r.errorHistory = {r.errors};
}

template <class T>
PlanResult<T> hardEspResult(std::vector<HardSlice> slices, const Vec<T>& costs, const Mat<T>& theta, double tau,
                            Eigen::Index nq, Eigen::Index nk) {
  PlanResult<T> r;
  // Break-rule matchings in both sort modes (the permutations SoftSort approaches as sort_temp → 0).
  r.extras[EspExtras::matchings] = matchingsMatrix<T>(slices, nq);
  r.extras[EspExtras::ties] = tieCounts<T>(slices);
  const Vec<T> weights = sliceWeights(costs, tau);
  r.plan = Plan<T>(std::make_shared<const SlicedPlan<T>>(std::move(slices), weights, nq, nk));
  setEspTargetsAndErrors(r);
  r.extras[EspExtras::weights] = weights;
  r.extras[EspExtras::costs] = costs;
  r.extras[EspExtras::directions] = theta;
  return r;
}

template <class T>
void widenEspMatchings(PlanResult<T>& r, const Mask& mask) {
  const std::vector<Eigen::Index> valid = validIndices(mask);
  Mat<T>& sub = r.extras[EspExtras::matchings];
  Mat<T> out = Mat<T>::Constant(sub.rows(), mask.size(), T(-1));
  for (Eigen::Index l = 0; l < sub.rows(); ++l)
    for (size_t c = 0; c < valid.size(); ++c) out(l, valid[c]) = T(valid[Eigen::Index(sub(l, Eigen::Index(c)))]);
  sub = std::move(out);
}

#define TL_ESP_RESULT(T)                                                                                         \
  template std::pair<Mat<T>, Mat<T>> espQueriesAndKeys(const AttentionInput<T>&, const EspParams&);             \
  template PlanResult<T> hardEspResult(std::vector<HardSlice>, const Vec<T>&, const Mat<T>&, double, Eigen::Index, \
                                       Eigen::Index);                                                            \
  template void setEspTargetsAndErrors(PlanResult<T>&);                                                          \
  template void widenEspMatchings(PlanResult<T>&, const Mask&);
TL_ESP_RESULT(float)
TL_ESP_RESULT(double)
#undef TL_ESP_RESULT

}  // namespace tl
