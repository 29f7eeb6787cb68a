#include "ops/banded/banded_gradients.h"

#include <chrono>
#include <string>

#include "common/errors.h"
#include "ops/banded/banded_tail.h"

namespace tl {

namespace {

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

template <class T>
void checkCotangent(const AttentionInput<T>& input, const Mat<T>& G) {
  if (!input.V) throw InvalidArgument("banded gradients: V is required (the loss is Σ G_ij·O_ij with O = A·V)");
  if (G.rows() != input.Q.rows() || G.cols() != input.V->cols())
    throw InvalidArgument("banded gradients: G is " + std::to_string(G.rows()) + "×" + std::to_string(G.cols()) +
                          " but the output is " + std::to_string(input.Q.rows()) + "×" +
                          std::to_string(input.V->cols()) + " (n_q × d_v)");
  if (!allEntriesFinite(G)) throw InvalidArgument("banded gradients: G has NaN or infinite entries");
}

}  // namespace

template <class T>
BandedGradients<T> bandedGradients(const AttentionInput<T>& input, const BandedParams& params, const Mat<T>& G,
                                   const BandedGradientOptions& options) {
  checkCotangent(input, G);
  auto start = std::chrono::steady_clock::now();
  const banded::System<T> sys = banded::makeSystem(input, params, &G);
  banded::Iterates<T> it = banded::startIterates(sys);
  banded::appendSteps(sys, it, params.baseSteps, true);   // stopped base, centred
  banded::appendSteps(sys, it, params.tailSteps, false);  // tail, raw
  const int last = params.baseSteps + params.tailSteps;
  BandedGradients<T> out;
  out.output = banded::toOriginal(sys, sys.X->apply(it.u.back(), it.v.back(), T(1), sys.V), true, input.Q.rows());
  out.forwardSeconds = secondsSince(start);

  start = std::chrono::steady_clock::now();
  const bool full = options.mode == BandedGradientMode::Full;
  const bool oneReference =
      !full && params.tailSteps == 2 && options.schedule == BandedTailSchedule::OneReference;
  const banded::Pullback<T> pb =
      banded::pullBackOutput(sys, it, full ? 0 : params.baseSteps, last,
                             oneReference ? BandedTailSchedule::OneReference : BandedTailSchedule::Direct);
  out.dQ = banded::toOriginal(sys, pb.dQ, true, input.Q.rows());
  out.dK = banded::toOriginal(sys, pb.dK, false, input.K.rows());
  out.dV = banded::toOriginal(sys, pb.dV, false, input.K.rows());
  out.backwardSeconds = secondsSince(start);
  return out;
}

template BandedGradients<float> bandedGradients(const AttentionInput<float>&, const BandedParams&, const Mat<float>&,
                                                const BandedGradientOptions&);
template BandedGradients<double> bandedGradients(const AttentionInput<double>&, const BandedParams&,
                                                 const Mat<double>&, const BandedGradientOptions&);

}  // namespace tl
