#pragma once
// The vectorised exponential of every log-domain inner loop (log-sum-exp half-steps, plans, the fused softmax),
// for any Eigen packet of float or double. It replaces Eigen 3.4's pexp, whose double version divides (a
// rational approximant) and rescales through a four-factor ldexp: this one takes half the time per double on
// AVX-512 (0.53 vs 1.1 ns on one core of the development Xeon), 15 % less per float, and is more accurate
// (within 0.93 ulp of exp over the normal range in both precisions, where Eigen's double exp reaches 1.7 ulp).
//
// exp(x) = 2^n · exp(r), n = round(x / ln 2), r = x − n·ln 2 in [−ln2/2, ln2/2] (ln 2 in two parts, so r is
// exact to well below an ulp), exp(r) = 1 + r·q(r) with q the degree-5 (float) or degree-10 (double)
// Chebyshev fit of (eʳ − 1)/r on that interval: its error, 6e-9 and 9e-18 relative, is far below an ulp, and
// exp(0) is exactly 1. scripts/exp_polynomial.py regenerates the coefficients (mpmath's chebyfit).
// x is clamped first, to a range where 2^n·exp(r) already rounds to 0 below and overflows to inf above, so
// exp(−inf) is exactly 0, exp(+inf) = inf, and NaN stays NaN; results in the subnormal range are subnormal.
#include <Eigen/Core>

namespace tl {
namespace packet_exp_detail {

template <class T>
struct Constants;

template <>
struct Constants<float> {
  static constexpr float kLowest = -104.0f, kHighest = 89.0f;  // exp rounds to 0 below, to inf above
  static constexpr float kLn2High = 0.693145751953125f;         // ln 2 to 16 bits: n·kLn2High is exact
  static constexpr float kLn2Low = 1.428606765330187045e-06f;
  static constexpr float kQ[] = {0.0013933641031986701f, 0.008369148490856347f, 0.04166646500604005f,
                                 0.16666505260408124f,   0.5000000013457727f,   1.00000001077157f};
};

template <>
struct Constants<double> {
  static constexpr double kLowest = -746.0, kHighest = 710.0;
  static constexpr double kLn2High = 0.693147180369123816490;  // ln 2 to 32 bits
  static constexpr double kLn2Low = 1.90821492927058770002e-10;
  static constexpr double kQ[] = {2.510520637395701e-08,  2.7626357241447223e-07, 2.7557255425746435e-06,
                                  2.4801504346997686e-05, 0.00019841269874800493, 0.0013888888932488599,
                                  0.008333333333326141,   0.04166666666657314,    0.1666666666666667,
                                  0.5000000000000006,     1.0};
};

// y · 2^n for integral n. AVX-512 does it in one instruction that also saturates to 0 and inf; elsewhere
// Eigen's ldexp, which handles every exponent by splitting it into several factors.
template <class Packet>
Packet timesPowerOfTwo(const Packet& y, const Packet& n) {
  return Eigen::internal::pldexp(y, n);
}
#ifdef EIGEN_VECTORIZE_AVX512
template <>
inline Eigen::internal::Packet16f timesPowerOfTwo(const Eigen::internal::Packet16f& y,
                                                  const Eigen::internal::Packet16f& n) {
  return _mm512_scalef_ps(y, n);
}
template <>
inline Eigen::internal::Packet8d timesPowerOfTwo(const Eigen::internal::Packet8d& y,
                                                 const Eigen::internal::Packet8d& n) {
  return _mm512_scalef_pd(y, n);
}
#endif

}  // namespace packet_exp_detail

template <class Packet>
Packet packetExp(const Packet& x) {
  using namespace Eigen::internal;
  using T = typename unpacket_traits<Packet>::type;
  using C = packet_exp_detail::Constants<T>;
  // pmin/pmax keep a NaN in their first argument, so NaN passes the clamp.
  const Packet clamped = pmin(pmax(x, pset1<Packet>(C::kLowest)), pset1<Packet>(C::kHighest));
  const Packet n = print(pmul(clamped, pset1<Packet>(T(1.4426950408889634074))));  // round to nearest
  Packet r = pmadd(n, pset1<Packet>(-C::kLn2High), clamped);
  r = pmadd(n, pset1<Packet>(-C::kLn2Low), r);
  Packet q = pset1<Packet>(C::kQ[0]);
  for (size_t k = 1; k < sizeof(C::kQ) / sizeof(T); ++k) q = pmadd(q, r, pset1<Packet>(C::kQ[k]));
  return packet_exp_detail::timesPowerOfTwo(pmadd(q, r, pset1<Packet>(T(1))), n);
}

}  // namespace tl
