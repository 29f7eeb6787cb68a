#pragma once
// ESP parameters (docs/operators/esp.md#parameters; the glossary names of docs/conventions.md#glossary: tau,
// p, slicer, L, sort, sort_temp; ties, rank_coupling and compat are the tool's resolutions,
// docs/operators/esp.md#resolutions) and the schema that drives CLI, GUI and Session JSON.
#include "common/param_bindings.h"
#include "common/params.h"
#include "ops/esp/esp_slice.h"
#include "ops/esp/rank_coupling.h"
#include "ops/mask_mode.h"
#include "ops/slicers.h"

namespace tl {

enum class SortMode { Hard, Soft };

// docs/operators/esp.md#compat: the public code uses p = 1 on q, k pre-scaled by d^{-1/2}; the paper uses
// p = 2 unscaled.
enum class EspCompat { Paper, ReferenceCode };

struct EspParams {
  double tau;  // inverse temperature of the slice weights w = softmax(−tau·D)
  double p;    // ground-cost exponent; compat=reference-code uses 1 instead
  SortMode sort;
  double sortTemp;  // SoftSort temperature t
  TiePolicy ties;
  SliceSpec slices;  // slicer, L, seed, file directions
  RankCoupling rankCoupling;  // n_q ≠ n_k (docs/operators/esp.md#unequal-sizes)
  EspCompat compat;
  MaskMode maskMode;

  EspParams();  // the schema's defaults (no slice file)
  // Reads the slice file when slicer=file (errors name `slices`) and checks the combination.
  static EspParams from(const ParamSet& resolved);
  double costExponent() const { return compat == EspCompat::ReferenceCode ? 1.0 : p; }
  // Ranges through the schema, then the combinations it cannot express; InvalidArgument naming the parameter.
  void check() const;
};
const ParamBindings<EspParams>& espParamBindings();

}  // namespace tl
