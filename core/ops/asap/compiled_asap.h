#pragma once
// A compiled model: the ASAP layers fitted to a Sinkhorn checkpoint (docs/operators/asap.md#compiled-models),
// saved in one folder as
//   asap.safetensors   layers.<l>.slices (L×d) and layers.<l>.beta (L), float32 (the model's precision); with
//                      features=predict-both also layers.<l>.key_beta (L), β_g
//   asap.json          the manifest: checkpoint, calibration set, teacher, fit settings (the feature family
//                      included; a manifest without it is the sliced potentials) and per-layer R², δ, λ_B, λ,
//                      rows and fit time (and the key side's R², δ for predict-both)
// The slices and β in memory are the stored float32 values, so a compiled state behaves the same before and
// after a save and load, bit for bit.
#include <string>
#include <vector>

#include "common/matrix.h"

namespace tl {

struct CompiledAsapLayer {
  int layer = 0;
  MatD slices;  // Θ, L×d
  VecD beta;    // β, L
  VecD keyBeta;  // β_g, L, features=predict-both only (else empty)
  uint64_t seed = 0;  // of the slice bank
  std::string fit;    // "ls" or "kl"
  double lambdaB = 0, lambda = 0;
  long long rows = 0, instances = 0;
  double r2 = 0, delta = 0;
  double keyR2 = 0, keyDelta = 0;  // predict-both: ĝ against ḡ
  double fitSeconds = 0;  // teacher extraction + features + solve for this layer
  bool converged = true;  // KL only
};

struct CompiledAsap {
  std::string checkpoint;   // as given to the compiler
  std::string calibration;  // e.g. "fashion-mnist:train:0-999"
  std::string teacher;      // the teacher's normaliser, e.g. "sinkhorn:T=4,eps=1,mask_mode=subsequence"
  int T = 0;
  double eps = 1;
  std::string closing;  // "column" (even T) or "row" (odd T)
  bool sequential = false;
  bool shared = false;  // one slice bank and β for every layer ("shared coefficients")
  std::string features = "potentials";  // the feature family (ops/asap/feature_families.h)
  std::vector<CompiledAsapLayer> layers;  // ascending layer index

  const CompiledAsapLayer& at(int layer) const;  // InvalidArgument naming the compiled layers
  // Rounds slices and β to float32, as stored.
  void roundToStoredPrecision();
};

// Atomic writes of both files (the folder is created). FileError when it cannot write.
void saveCompiledAsap(const std::string& dir, const CompiledAsap& compiled);
// FileError for missing or corrupt files, naming them.
CompiledAsap loadCompiledAsap(const std::string& dir);
// The same through a cache keyed by the folder and the files' size and modification time (operators are
// rebuilt per image and per slider tick).
CompiledAsap loadCompiledAsapCached(const std::string& dir);

// "asap:compiled=DIR,eps=…,closing=…" for the compiled model in `dir`: two-sided ASAP ending on the teacher's
// side, each layer using its own slices and β; ",features=…" when the family is not the sliced potentials.
std::string compiledAsapOperator(const CompiledAsap& compiled, const std::string& dir);

}  // namespace tl
