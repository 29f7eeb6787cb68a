#include "ops/esp/esp_soft_device.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <vector>

#include "common/argsort.h"
#include "common/errors.h"
#include "ops/esp/esp.h"
#include "ops/esp/esp_result.h"
#include "ops/esp/rank_coupling.h"
#include "ops/esp/soft_sort.h"
#include "ops/log_domain.h"
#include "ops/marginals.h"
#include "ops/subsequence.h"

namespace tl {
namespace {

// The tokens of a side that take part: all n, or the valid ones (mask_mode=subsequence).
std::vector<Eigen::Index> takingPart(Eigen::Index n, const std::optional<Mask>& mask) {
  if (mask) return validIndices(*mask);
  std::vector<Eigen::Index> all(static_cast<size_t>(n));
  std::iota(all.begin(), all.end(), Eigen::Index(0));
  return all;
}

// One side's projections on every slice, sorted: values [L][n] ascending and the token at each position.
void sortProjections(const MatF& X, const std::vector<Eigen::Index>& tokens, const MatF& theta,
                     std::vector<float>& sorted, std::vector<int>& sortedTokens) {
  // Rows of the valid block times Θᵀ, as the CPU projects them; then one slice per row.
  const MatF projections = (takeRows(X, tokens) * theta.transpose()).transpose();
  ArgsortWorkspace<float> workspace;
  std::vector<int> order;
  for (Eigen::Index l = 0; l < projections.rows(); ++l) {
    stableArgsort(projections.row(l).data(), size_t(projections.cols()), order, workspace);
    for (int c : order) {
      sorted.push_back(projections(l, c));
      sortedTokens.push_back(int(tokens[size_t(c)]));
    }
  }
}

// max |A − H| over every entry, H given by its stored entries (row-major, each once).
float distanceToSparse(const MatF& A, const std::vector<PlanEntry<float>>& H) {
  float worst = 0;
  size_t e = 0;
  for (Eigen::Index i = 0; i < A.rows(); ++i)
    for (Eigen::Index j = 0; j < A.cols(); ++j) {
      const bool stored = e < H.size() && H[e].row == i && H[e].col == j;
      worst = std::max(worst, std::abs(A(i, j) - (stored ? H[e++].value : 0.f)));
    }
  return worst;
}

}  // namespace

PlanResult<float> espSoftOnDevice(const AttentionInput<float>& input, const EspParams& params,
                                  const DenseKernels& kernels, Feedback& feedback) {
  const auto start = std::chrono::steady_clock::now();
  if (params.sort != SortMode::Soft)
    throw InvalidArgument("esp: espSoftOnDevice computes sort=soft; sort=hard has its own device path");
  // The hard result first (it checks the parameters and the input): matchings, ties, directions, targets, and
  // the hard plan as its slices' entries for esp_hard_distance.
  EspParams hardParams = params;
  hardParams.sort = SortMode::Hard;
  AttentionInput<float> withoutValues{input.Q, input.K, std::nullopt, input.mask};
  PlanResult<float> r = espAttention(withoutValues, hardParams, feedback);
  const std::optional<std::vector<PlanEntry<float>>> hardEntries = r.plan.storedEntries();

  const std::vector<Eigen::Index> queryTokens = takingPart(input.Q.rows(), input.mask);
  const std::vector<Eigen::Index> keyTokens = takingPart(input.K.rows(), input.mask);
  const int valid = int(queryTokens.size()), validK = int(keyTokens.size());
  checkDenseSize(std::max(valid, validK), std::max(valid, validK), sizeof(float), "ESP SoftSort");
  const std::pair<MatF, MatF> queriesAndKeys = espQueriesAndKeys(input, params);
  const MatF &Q = queriesAndKeys.first, &K = queriesAndKeys.second;
  const MatF& theta = r.extras.at(EspExtras::directions);

  cuda::EspSoftProblem p;
  p.nq = int(Q.rows());
  p.nk = int(K.rows());
  p.d = int(Q.cols());
  p.q = Q.data();
  p.k = K.data();
  if (input.V) {
    p.v = input.V->data();
    p.dv = int(input.V->cols());
  }
  p.slices = int(theta.rows());
  p.validQ = valid;
  p.validK = validK;
  sortProjections(Q, queryTokens, theta, p.sortedQ, p.tokenQ);
  sortProjections(K, keyTokens, theta, p.sortedK, p.tokenK);
  for (const RankCouplingEntry& e : rankCoupling(valid, validK, params.rankCoupling)) {
    p.couplingRank.push_back(e.r);
    p.couplingKeyRank.push_back(e.s);
    p.couplingMass.push_back(float(e.mass));
  }
  p.sortTemp = float(params.sortTemp);
  p.reach = softSortReach(p.sortTemp);
  p.p = float(params.costExponent());

  Vec<float> weights;
  const auto coefficients = [&](const std::vector<float>& costs) {
    weights = sliceWeights<float>(Eigen::Map<const Vec<float>>(costs.data(), Eigen::Index(costs.size())), params.tau);
    std::vector<float> c(costs.size());
    for (size_t l = 0; l < c.size(); ++l) c[l] = float(valid) * weights(Eigen::Index(l));  // A = n_q·Σ_l w_l U_l
    return c;
  };
  const cuda::EspSoftCudaResult g = kernels.espSoft(p, coefficients, [&feedback] { return feedback.isCanceled(); });

  MatF plan = Eigen::Map<const MatF>(g.plan.data(), p.nq, p.nk);
  if (input.V) r.output = MatF(Eigen::Map<const MatF>(g.output.data(), p.nq, p.dv));
  r.errors = marginalErrorsFromSums<float>(plan.rowwise().sum(), r.rowTarget, plan.colwise().sum().transpose(),
                                           r.colTarget);
  r.errorHistory = {r.errors};
  r.extras[EspExtras::hardDistance] = MatF::Constant(1, 1, distanceToSparse(plan, hardEntries.value()));
  r.extras[EspExtras::weights] = weights;
  r.extras[EspExtras::costs] = Eigen::Map<const Vec<float>>(g.costs.data(), Eigen::Index(g.costs.size()));
  r.plan = std::move(plan);
  r.backend = Backend::Cuda;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

}  // namespace tl
