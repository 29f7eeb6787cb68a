#include "ops/esp/esp_params.h"

#include <cmath>

#include "common/errors.h"

namespace tl {
ParamSchema espSchema() {
  ParamSpec tau = realParam("tau", 0, 1e6, 0.1, "inverse temperature of the slice weights w = softmax(−tau·D_l): "
                                           "0 averages the slices, large tau keeps the cheapest");
  tau.uiMin = 0;
  tau.uiMax = 20;
  ParamSpec p = realParam("p", 0, 16, 2.0, "ground-cost exponent, C_ij = ‖q_i − k_j‖^p (paper 2, reference code 1)");
  p.minExclusive = true;
  p.uiMin = 1;
  p.uiMax = 4;
  ParamSpec sortTemp = realParam("sort_temp", 1e-30, 1e6, 1e-3,
                            "SoftSort temperature t (sort=soft); the plan is hard once t ≲ (min gap)²/50");
  sortTemp.logScale = true;
  sortTemp.uiMin = 1e-8;
  sortTemp.uiMax = 1;
  return ParamSchema({
      tau,
      p,
      choiceParam("sort", {"hard", "soft"}, "hard = exact sorting (doubly stochastic); soft = SoftSort relaxation"),
      sortTemp,
      choiceParam("ties", {"split", "break"},
             "equal projections: split = share mass inside tie groups (eq. 5); break = stable (value, index) order"),
      choiceParam("slicer", {"axis", "random", "file"},
             "slice directions: axis = the d feature axes; random = L seeded unit directions; file = slices"),
      intParam("L", 0, 65536, 0, "number of slices (0 = d; slicer=file takes the file's rows)"),
      intParam("seed", 0, 9007199254740992.0, 0, "seed of slicer=random (stored with the result)"),
      pathParam("slices", "slicer=file: .npy array of L×d slice directions, one per row"),
      choiceParam("rank_coupling", {"nw-corner", "interpolation"},
             "n_q ≠ n_k: nw-corner = exact 1-D coupling (columns sum to n_q/n_k); interpolation = paper eq. 11"),
      choiceParam("compat", {"paper", "reference-code"},
             "reference-code = public ESPFormer code: p = 1 (p is ignored) on q, k scaled by d^-1/2"),
      maskModeSpec(false),
  });
}

EspParams EspParams::from(const ParamSet& params) {
  EspParams p;
  p.tau = getReal(params, "tau");
  p.p = getReal(params, "p");
  p.sort = getString(params, "sort") == "soft" ? SortMode::Soft : SortMode::Hard;
  p.sortTemp = getReal(params, "sort_temp");
  p.ties = getString(params, "ties") == "break" ? TiePolicy::Break : TiePolicy::Split;
  p.slices.slicer = parseSlicer(getString(params, "slicer"));
  p.slices.L = int(getInt(params, "L"));
  p.slices.seed = uint64_t(getInt(params, "seed"));
  const auto path = getOptionalString(params, "slices");
  if (path && p.slices.slicer != Slicer::File)
    throw InvalidArgument("esp: slices = " + *path + " is only read with slicer=file; add slicer=file or drop slices");
  if (path) p.slices.fileDirections = readSliceFile(*path);
  p.rankCoupling = parseRankCoupling(getString(params, "rank_coupling"));
  p.compat = getString(params, "compat") == "reference-code" ? EspCompat::ReferenceCode : EspCompat::Paper;
  p.maskMode = parseMaskMode(getString(params, "mask_mode"));
  p.check();
  return p;
}

void EspParams::check() const {
  if (maskMode == MaskMode::KeepQueries)
    throw InvalidArgument("esp: mask_mode = keep-queries is not supported; ESP acts on the valid tokens only, "
                          "use mask_mode=subsequence");
  if (!(tau >= 0) || !std::isfinite(tau))
    throw InvalidArgument("esp: tau = " + std::to_string(tau) +
                          " is not valid; expected tau >= 0 (0 averages the slices, large tau keeps the cheapest)");
  if (!(p > 0) || !std::isfinite(p))
    throw InvalidArgument("esp: p = " + std::to_string(p) + " is not valid; expected p > 0 (the paper uses 2)");
  if (!(sortTemp >= 1e-30) || !std::isfinite(sortTemp))
    throw InvalidArgument("esp: sort_temp = " + std::to_string(sortTemp) + " is not valid; expected sort_temp >= 1e-30");
  if (slices.L < 0) throw InvalidArgument("esp: L = " + std::to_string(slices.L) + " is not valid; expected L >= 0");
  if (slices.slicer == Slicer::File && slices.fileDirections.size() == 0)
    throw InvalidArgument("esp: slicer=file needs slices=PATH.npy, an L×d array with one direction per row");
}

}  // namespace tl
