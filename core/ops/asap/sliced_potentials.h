#pragma once
// One-dimensional Kantorovich potentials of the monotone matching, and the sliced feature matrix Φ built
// from them (docs/operators/asap.md#features). Cost c(x, y) = ½(x − y)²; projections
// x = <θ, q>/d^{1/4}, y = <θ, k>/d^{1/4}.
#include <optional>

#include "common/matrix.h"

namespace tl {

struct Potential1D {
  Vec<double> f;  // source potential, one per x (not centred)
  Vec<double> g;  // key potential on each y's matched atom: g_(i) = ½(x_(i) − y_(i))² − f_(i); square case only
};

// docs/operators/asap.md#features: sort x and y ascending (stable), f_(1) = ½x_(1)², then
// f_(i+1) = f_(i) + ½(x_(i+1)² − x_(i)²) − s_i (x_(i+1) − x_(i)) with slope s_i = y_(i) when |x| = |y|,
// and y_(⌈i·n_y/n_x⌉) otherwise ([G] non-square extension). Ties in x give identical potentials.
Potential1D potential1D(const Vec<double>& x, const Vec<double>& y);

// The convex extension f(z) = ½z² − φ(z) of the same potential at arbitrary points z
// (docs/operators/asap.md#masks), with φ the piecewise-linear interpolant (φ(x_(1)) = 0, slopes s_i, outer
// rays of slope s_1 and s_last).
Vec<double> potentialExtension(const Vec<double>& x, const Vec<double>& y, const Vec<double>& z);

// The monotone transport map of the same matching at arbitrary points z: T(z) = the right derivative of φ at z,
// i.e. the slope s_i of the interval [x_(i), x_(i+1)) holding z (outer rays: s_1 left of x_(1), the largest key
// from x_(n) on). For distinct x and |x| = |y|, T(x_i) = y_(rank(i)); tied x share the slope after their block.
// The rank-displacement features are T(x) − x (docs/operators/asap.md#feature-families).
Vec<double> monotoneMapAt(const Vec<double>& x, const Vec<double>& y, const Vec<double>& z);

// Φ (n_q × L), column l = centred 1-D potential along slice θ_l (rows of `slices`, unit norm assumed by
// the caller or not: the projection uses θ as given). With `activeTokens` (self-attention padding), the
// 1-D problem uses active queries against active keys; padded queries get the convex extension
// (docs/operators/asap.md#masks); centring is over active positions.
MatD slicedFeatures(const MatD& Q, const MatD& K, const MatD& slices, const std::optional<Mask>& activeTokens);

}  // namespace tl
