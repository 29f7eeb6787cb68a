#include "ops/esp/rank_coupling.h"

#include <algorithm>
#include <cmath>

#include "common/errors.h"

namespace tl {
namespace {

// Interval overlap in integer units of 1/(n_q·n_k): query rank r covers [r·n_k, (r+1)·n_k), key rank s
// covers [s·n_q, (s+1)·n_q). Integer arithmetic makes n_q = n_k give exactly 1/n.
std::vector<RankCouplingEntry> northWestCorner(int nq, int nk) {
  std::vector<RankCouplingEntry> out;
  const double unit = double(nq) * double(nk);
  int r = 0, s = 0;
  while (r < nq && s < nk) {
    const long long qEnd = (long long)(r + 1) * nk, kEnd = (long long)(s + 1) * nq;
    const long long overlap = std::min(qEnd, kEnd) - std::max((long long)r * nk, (long long)s * nq);
    if (overlap > 0) out.push_back({r, s, double(overlap) / unit});
    if (qEnd <= kEnd) ++r;
    if (kEnd <= qEnd) ++s;
  }
  return out;
}

// docs/operators/esp.md#unequal-sizes: the code's linspace(0, 1, ·) hat matrix; x = 0 for every r when
// n_q = 1.
std::vector<RankCouplingEntry> interpolation(int nq, int nk) {
  std::vector<RankCouplingEntry> out;
  for (int r = 0; r < nq; ++r) {
    const double x = nq == 1 ? 0.0 : double(r) * double(nk - 1) / double(nq - 1);
    const int s0 = int(std::floor(x));
    for (int s = s0; s <= std::min(s0 + 1, nk - 1); ++s) {
      const double hat = 1.0 - std::abs(x - double(s));
      if (hat > 0) out.push_back({r, s, hat / double(nq)});
    }
  }
  return out;
}

}  // namespace

RankCoupling parseRankCoupling(const std::string& text) {
  if (text == "nw-corner") return RankCoupling::NorthWestCorner;
  if (text == "interpolation") return RankCoupling::Interpolation;
  throw InvalidArgument("rank_coupling = '" + text + "' is not valid; expected nw-corner or interpolation");
}

std::vector<RankCouplingEntry> rankCoupling(int nQueries, int nKeys, RankCoupling kind) {
  return kind == RankCoupling::NorthWestCorner ? northWestCorner(nQueries, nKeys) : interpolation(nQueries, nKeys);
}

}  // namespace tl
