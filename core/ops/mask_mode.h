#pragma once
// Padding conventions shared by every family (docs/conventions.md#masks, `mask_mode`).
//  subsequence  : padded tokens are dropped; the operator acts on the valid sub-block with marginals
//                 1/n_valid; padded rows and columns of the plan are 0 (duals -inf there).
//  keep-queries : Sinkformer text-code convention (docs/conventions.md#masks): padded keys get zero column
//                 mass, every query row is kept with mu = 1/n.
#include <string>

#include "common/param_bindings.h"
#include "common/params.h"

namespace tl {

enum class MaskMode { Subsequence, KeepQueries };

MaskMode parseMaskMode(const std::string& text);
const char* maskModeName(MaskMode mode);
// The schema entry every family declares; `keepQueriesSupported` = false restricts the choices.
ParamSpec maskModeSpec(bool keepQueriesSupported);

// Binds `mask_mode` to P::maskMode.
template <class P>
ParamBindings<P>& bindMaskMode(ParamBindings<P>& bindings, bool keepQueriesSupported) {
  return bindings.parsed(maskModeSpec(keepQueriesSupported), &P::maskMode, parseMaskMode, maskModeName);
}

}  // namespace tl
