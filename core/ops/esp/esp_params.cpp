#include "ops/esp/esp_params.h"

#include <cmath>

#include "common/errors.h"

namespace tl {
namespace {

// Parse and name functions for the choices kept as enums.
SortMode parseSortMode(const std::string& t) { return t == "soft" ? SortMode::Soft : SortMode::Hard; }
const char* sortModeName(SortMode m) { return m == SortMode::Soft ? "soft" : "hard"; }
TiePolicy parseTies(const std::string& t) { return t == "break" ? TiePolicy::Break : TiePolicy::Split; }
const char* tiesName(TiePolicy t) { return t == TiePolicy::Break ? "break" : "split"; }
EspCompat parseCompat(const std::string& t) { return t == "reference-code" ? EspCompat::ReferenceCode : EspCompat::Paper; }
const char* compatName(EspCompat c) { return c == EspCompat::ReferenceCode ? "reference-code" : "paper"; }
const char* rankCouplingName(RankCoupling c) { return c == RankCoupling::Interpolation ? "interpolation" : "nw-corner"; }
const char* slicerName(Slicer s) { return s == Slicer::Random ? "random" : s == Slicer::File ? "file" : "axis"; }

ParamBindings<EspParams> makeEspBindings() {
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

  ParamBindings<EspParams> b;
  b.field(tau, &EspParams::tau);
  b.field(p, &EspParams::p);
  b.parsed(choiceParam("sort", {"hard", "soft"}, "hard = exact sorting (doubly stochastic); soft = SoftSort relaxation"),
           &EspParams::sort, parseSortMode, sortModeName);
  b.field(sortTemp, &EspParams::sortTemp);
  b.parsed(choiceParam("ties", {"split", "break"},
                       "equal projections: split = share mass inside tie groups (eq. 5); break = stable (value, "
                       "index) order"),
           &EspParams::ties, parseTies, tiesName);
  b.custom(choiceParam("slicer", {"axis", "random", "file"},
                       "slice directions: axis = the d feature axes; random = L seeded unit directions; file = "
                       "slices"),
           [](EspParams& e, const ParamValue& v) { e.slices.slicer = parseSlicer(std::get<std::string>(v)); },
           [](const EspParams& e) { return ParamValue(std::string(slicerName(e.slices.slicer))); });
  b.custom(intParam("L", 0, 65536, 0, "number of slices (0 = d; slicer=file takes the file's rows)"),
           [](EspParams& e, const ParamValue& v) { e.slices.L = int(std::get<long long>(v)); },
           [](const EspParams& e) { return ParamValue((long long)e.slices.L); });
  b.custom(intParam("seed", 0, 9007199254740992.0, 0, "seed of slicer=random (stored with the result)"),
           [](EspParams& e, const ParamValue& v) { e.slices.seed = uint64_t(std::get<long long>(v)); },
           [](const EspParams& e) { return ParamValue((long long)e.slices.seed); });
  b.custom(pathParam("slices", "slicer=file: .npy array of L×d slice directions, one per row"),
           [](EspParams& e, const ParamValue& path) {
             if (e.slices.slicer != Slicer::File)  // `slicer` is bound before `slices`
               throw InvalidArgument("esp: slices = " + std::get<std::string>(path) +
                                     " is only read with slicer=file; add slicer=file or drop slices");
             e.slices.fileDirections = readSliceFile(std::get<std::string>(path));
           });
  b.parsed(choiceParam("rank_coupling", {"nw-corner", "interpolation"},
                       "n_q ≠ n_k: nw-corner = exact 1-D coupling (columns sum to n_q/n_k); interpolation = paper "
                       "eq. 11"),
           &EspParams::rankCoupling, parseRankCoupling, rankCouplingName);
  b.parsed(choiceParam("compat", {"paper", "reference-code"},
                       "reference-code = public ESPFormer code: p = 1 (p is ignored) on q, k scaled by d^-1/2"),
           &EspParams::compat, parseCompat, compatName);
  bindMaskMode(b, false);
  return b;
}

}  // namespace

const ParamBindings<EspParams>& espParamBindings() {
  static const ParamBindings<EspParams> bindings = makeEspBindings();
  return bindings;
}

EspParams::EspParams() { espParamBindings().fillDefaults(*this); }

EspParams EspParams::from(const ParamSet& resolved) {
  EspParams p = espParamBindings().fill(resolved);
  p.check();
  return p;
}

void EspParams::check() const {
  espParamBindings().check(*this, "esp");
  if (slices.slicer == Slicer::File && slices.fileDirections.size() == 0)
    throw InvalidArgument("esp: slicer=file needs slices=PATH.npy, an L×d array with one direction per row");
}

}  // namespace tl
