#pragma once
// What every operator returns: the attention-scale plan, its output on V, duals and their history,
// marginal errors after every step, timing, and named family-specific extras. Views and exports read
// only this, so a new family needs no new view code to show its plan and convergence.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/matrix.h"

namespace tl {

// Marginal errors of one plan in attention scale, against the operator's declared targets
// (docs/conventions.md#marginal-errors): 1 on balanced sides, 0 on padded rows/columns.
struct MarginalErrors {
  double rowMax = 0, rowMean = 0;
  double colMax = 0, colMean = 0;
};

template <class T>
struct PlanResult {
  // A = n·P (rows = queries). Padded rows/columns are 0. Present unless the operator ran lazily.
  Mat<T> plan;
  std::optional<Mat<T>> output;  // O = A V, when V was given

  // Final duals in score coordinates (docs/conventions.md#duals): P_ij = exp((S_ij + u_i + v_j)/eps).
  // Padded entries are -inf (zero marginal). Empty for operators without duals.
  Vec<T> u, v;
  // Row t-1 holds u (resp. v) after single normalisation t, for convergence plots.
  Mat<T> uHistory, vHistory;
  // Errors of the plan after each step t = 1..steps (one entry per step).
  std::vector<MarginalErrors> errorHistory;
  MarginalErrors errors;  // of the returned plan

  // Declared targets (attention scale) for rows and columns; differ from 1 under padding or n_q != n_k.
  Vec<T> rowTarget, colTarget;
  bool massMismatch = false;  // total row target != total column target (labelled "mass mismatch")

  double seconds = 0;  // wall time of the operator itself
  // Family-specific arrays (e.g. "esp_weights"), exported as <name>.npy by the CLI.
  std::map<std::string, Mat<T>> extras;

  template <class To>
  PlanResult<To> cast() const;
};

template <class T>
template <class To>
PlanResult<To> PlanResult<T>::cast() const {
  PlanResult<To> out;
  out.plan = plan.template cast<To>();
  if (output) out.output = output->template cast<To>();
  out.u = u.template cast<To>();
  out.v = v.template cast<To>();
  out.uHistory = uHistory.template cast<To>();
  out.vHistory = vHistory.template cast<To>();
  out.errorHistory = errorHistory;
  out.errors = errors;
  out.rowTarget = rowTarget.template cast<To>();
  out.colTarget = colTarget.template cast<To>();
  out.massMismatch = massMismatch;
  out.seconds = seconds;
  for (const auto& [name, m] : extras) out.extras[name] = m.template cast<To>();
  return out;
}

}  // namespace tl
