#pragma once
// What every operator returns: the attention-scale plan (an object: ops/transport_plan.h), its output on V,
// duals and their history, marginal errors after every step, timing, the backend that computed it, and
// named family-specific extras. Views and exports read only this, so a new family needs no new view code to
// show its plan and convergence.
#include <map>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "common/matrix.h"
#include "ops/backend.h"
#include "ops/transport_plan.h"

namespace tl {

// Marginal errors of one plan in attention scale, against the operator's declared targets
// (docs/conventions.md#marginal-errors): 1 on balanced sides, 0 on padded rows/columns.
struct MarginalErrors {
  double rowMax = 0, rowMean = 0;
  double colMax = 0, colMean = 0;
};

template <class T>
struct PlanResult {
  // A = n·P (rows = queries). Padded rows/columns are 0. Dense, or structured (formed only when asked).
  Plan<T> plan;
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

  double seconds = 0;             // wall time of the operator itself
  Backend backend = Backend::Cpu;  // what computed it (cpu or cuda)
  std::string backendNote;         // why the CPU computed it when the GPU was asked for; empty otherwise
  // Family-specific arrays (e.g. "esp_weights"), exported as <name>.npy by the CLI.
  std::map<std::string, Mat<T>> extras;

  // Calls f(a.field, b.field) for every field of two results, in declaration order: the one place that
  // lists the fields for generic conversions (cast).
  template <class A, class B, class F>
  static void forEachField(A& a, B& b, F&& f) {
    f(a.plan, b.plan);
    f(a.output, b.output);
    f(a.u, b.u);
    f(a.v, b.v);
    f(a.uHistory, b.uHistory);
    f(a.vHistory, b.vHistory);
    f(a.errorHistory, b.errorHistory);
    f(a.errors, b.errors);
    f(a.rowTarget, b.rowTarget);
    f(a.colTarget, b.colTarget);
    f(a.massMismatch, b.massMismatch);
    f(a.seconds, b.seconds);
    f(a.backend, b.backend);
    f(a.backendNote, b.backendNote);
    f(a.extras, b.extras);
  }

  // The same result in another precision (the Engine widens float runs to double for views and analyses).
  template <class To>
  PlanResult<To> cast() const;
};

namespace detail {
// Fields whose element type follows the result's precision; every other field is copied as it is.
template <class V>
struct FollowsPrecision : std::is_base_of<Eigen::EigenBase<V>, V> {};
template <class S>
struct FollowsPrecision<Plan<S>> : std::true_type {};
template <class M>
struct FollowsPrecision<std::optional<M>> : std::true_type {};
template <class M>
struct FollowsPrecision<std::map<std::string, M>> : std::true_type {};

// Converts one field of a PlanResult<From> into the matching field of a PlanResult<To>.
template <class To>
struct CastField {
  template <class From>
  void operator()(const Plan<From>& from, Plan<To>& to) const { to = from.template cast<To>(); }
  template <class M>
  void operator()(const Eigen::MatrixBase<M>& from, Mat<To>& to) const { to = from.template cast<To>(); }
  template <class M>
  void operator()(const Eigen::MatrixBase<M>& from, Vec<To>& to) const { to = from.template cast<To>(); }
  template <class M>
  void operator()(const std::optional<M>& from, std::optional<Mat<To>>& to) const {
    if (from) to = from->template cast<To>();
  }
  template <class M>
  void operator()(const std::map<std::string, M>& from, std::map<std::string, Mat<To>>& to) const {
    for (const auto& [name, m] : from) to[name] = m.template cast<To>();
  }
  // Precision-free fields (errors, flags, timings, the backend) are copied.
  template <class V, class = std::enable_if_t<!FollowsPrecision<V>::value>>
  void operator()(const V& from, V& to) const { to = from; }
};
}  // namespace detail

template <class T>
template <class To>
PlanResult<To> PlanResult<T>::cast() const {
  PlanResult<To> out;
  forEachField(*this, out, detail::CastField<To>{});
  return out;
}

}  // namespace tl
