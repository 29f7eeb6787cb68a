#pragma once
// ESP parameters (docs/operators/esp.md#parameters; the glossary names of docs/conventions.md#glossary: tau,
// p, slicer, L, sort, sort_temp; ties, rank_coupling and compat are the tool's resolutions,
// docs/operators/esp.md#resolutions) and the schema that drives CLI, GUI and Session JSON.
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
  double tau = 0.1;  // inverse temperature of the slice weights w = softmax(−tau·D)
  double p = 2;      // ground-cost exponent; compat=reference-code uses 1 instead
  SortMode sort = SortMode::Hard;
  double sortTemp = 1e-3;  // SoftSort temperature t
  TiePolicy ties = TiePolicy::Split;
  SliceSpec slices;  // slicer, L, seed, file directions
  RankCoupling rankCoupling = RankCoupling::NorthWestCorner;  // n_q ≠ n_k (docs/operators/esp.md#unequal-sizes)
  EspCompat compat = EspCompat::Paper;
  MaskMode maskMode = MaskMode::Subsequence;

  // Reads the slice file when slicer=file (errors name `slices`) and checks the combination.
  static EspParams from(const ParamSet& params);
  double costExponent() const { return compat == EspCompat::ReferenceCode ? 1.0 : p; }
  // Throws InvalidArgument naming the parameter (tau, p, sort_temp, L, slices, mask_mode).
  void check() const;
};

ParamSchema espSchema();

}  // namespace tl
