#pragma once
// What `tlens compare` reports: one row per operator with the analyses of analysis/summary.h and the
// distances to the reference operator, as an aligned text table (stdout), JSON and CSV.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "analysis/summary.h"
#include "ops/registry.h"
#include "session/session.h"
#include "session/source.h"

namespace tl::cli {

struct CompareRow {
  std::string label;  // the operator as written in --ops
  OperatorSpec op;    // resolved (defaults filled)
  PlanAnalysis analysis;
  PlanComparison distance;  // to the reference row
};

struct CompareReport {
  SourceSpec source;
  Precision precision = Precision::F64;
  int nQueries = 0, nKeys = 0, headDim = 0;
  bool hasValues = false;  // V given: the output difference is reported
  std::vector<CompareRow> rows;
  size_t reference = 0;  // index into rows
};

std::string compareText(const CompareReport& report);
nlohmann::json compareJson(const CompareReport& report);
std::string compareCsv(const CompareReport& report);  // full precision; operator numbers are 1-based

}  // namespace tl::cli
