#pragma once
// The [CLS] map panels of a model session (what the [CLS] map view draws), taken from its traces with
// analysis/cls_maps.h: the view, `tlens render` and the tests read the same numbers. One panel per head of the source's layer (query row
// or key column of [CLS]), or for rollout one panel per depth (rollout through layer 0, 1, ..., L−1); the
// large map repeats the source's head (or, for rollout, its layer).
#include <string>
#include <vector>

#include "analysis/cls_maps.h"
#include "session/engine.h"

namespace tl {

enum class ClsMapKind { Query, Key, Rollout };
const char* clsMapKindName(ClsMapKind kind);          // "query" | "key" | "rollout"
ClsMapKind parseClsMapKind(const std::string& name);  // InvalidArgument otherwise

// The model's own attention, the trace with the primary operator swapped in, or swapped − original.
enum class ClsTrace { Original, Swapped, Difference };
const char* clsTraceName(ClsTrace trace);          // "original" | "swapped" | "difference"
ClsTrace parseClsTrace(const std::string& name);   // InvalidArgument otherwise

struct ClsMapOptions {
  ClsMapKind kind = ClsMapKind::Query;
  ClsTrace trace = ClsTrace::Original;
  HeadFusion fusion = HeadFusion::Mean;  // rollout only
  double residual = 0.5;                 // rollout only: Â = (1 − residual)·A + residual·I
};

struct ClsMaps {
  ClsTrace trace = ClsTrace::Original;  // as drawn: Original when the session swapped nothing in
  std::vector<MatD> panels;             // grid rows × cols each
  int selected = 0;                     // index of the panel the large map shows
  double lo = 0, hi = 0;                // min and max over every panel; symmetric about 0 for differences
  const MatD& large() const { return panels[size_t(selected)]; }
};

// InvalidArgument when the result holds no model run.
ClsMaps clsMapsOf(const SessionResult& result, const ClsMapOptions& options);

}  // namespace tl
