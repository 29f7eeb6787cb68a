#include "compare_report.h"

#include <cmath>
#include <cstdio>

#include "io/csv.h"
#include "plan_metrics.h"
#include "text_table.h"

namespace tl::cli {
namespace {

std::string format(const char* pattern, double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, pattern, x);
  return buf;
}

// Errors and distances span many decades: scientific, with exact zeros and infinities spelled out, and "n/a" for
// a quantity the plans do not define (NaN: the row KL of a diff map).
std::string scientific(double x, int digits) {
  if (std::isnan(x)) return "n/a";
  if (x == 0) return "0";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  return format(digits == 1 ? "%.1e" : "%.2e", x);
}

std::string duration(double seconds) {
  if (seconds < 1e-3) return format("%.0f µs", seconds * 1e6);
  if (seconds < 1) return format("%.1f ms", seconds * 1e3);
  return format("%.2f s", seconds);
}

std::string errorPair(double max, double mean) { return scientific(max, 1) + " / " + scientific(mean, 1); }

std::string full(double x) { return format("%.17g", x); }

}  // namespace

std::string compareText(const CompareReport& report) {
  const CompareRow& ref = report.rows[report.reference];
  using A = TextTable::Align;
  std::vector<TextTable::Column> columns = {{"#", A::Right},
                                            {"operator", A::Left},
                                            {"time", A::Right},
                                            {"row err max / mean", A::Right},
                                            {"col err max / mean  ", A::Right},
                                            {"entropy", A::Right},
                                            {"max col", A::Right},
                                            {"Gini", A::Right},
                                            {"eff rank", A::Right},
                                            {"num rank", A::Right},
                                            {"rel Frob", A::Right},
                                            {"max abs", A::Right},
                                            {"row KL", A::Right}};
  if (report.hasValues) columns.push_back({"out diff", A::Right});
  TextTable table(std::move(columns));

  bool anyMismatch = false;
  for (size_t i = 0; i < report.rows.size(); ++i) {
    const CompareRow& row = report.rows[i];
    const PlanAnalysis& a = row.analysis;
    anyMismatch = anyMismatch || a.massMismatch;
    std::vector<std::string> cells = {std::to_string(i + 1),
                                      row.label,
                                      duration(a.seconds),
                                      errorPair(a.errors.rowMax, a.errors.rowMean),
                                      errorPair(a.errors.colMax, a.errors.colMean) + (a.massMismatch ? " *" : "  "),
                                      std::isnan(a.entropy.mean)
                                          ? "n/a"
                                          : format("%.3f", a.entropy.mean) + " ± " + format("%.3f", a.entropy.stddev),
                                      format("%.3f", a.columnMass.maxSum),
                                      format("%.3f", a.columnMass.gini),
                                      a.rank ? format("%.2f", a.rank->effective) : "—",
                                      a.rank ? std::to_string(a.rank->numerical) : "—"};
    const bool isReference = i == report.reference;
    const PlanComparison& d = row.distance;
    for (const std::string& cell :
         {scientific(d.relativeFrobenius, 2), scientific(d.maxAbs, 2), scientific(d.meanRowKl, 2)})
      cells.push_back(isReference ? "ref" : cell);
    if (report.hasValues)
      cells.push_back(isReference ? "ref" : d.outputDifference ? scientific(*d.outputDifference, 2) : "-");
    table.addRow(std::move(cells));
  }

  std::string text = std::to_string(report.nQueries) + "x" + std::to_string(report.nKeys) +
                     " plans (d=" + std::to_string(report.headDim) + ", " + precisionName(report.precision) +
                     ") from " + report.source.toString() + "; distances to #" + std::to_string(report.reference + 1) +
                     " " + ref.label + "\n\n" + table.render() + "\n";
  text +=
      "err: max / mean |sum - target| in attention scale (docs/conventions.md#marginal-errors); "
      "entropy: mean ± std over rows (nats)\n"
      "max col, Gini: column sums, the sink signal (Gini 0 = balanced, (n-1)/n = one column holds all)\n"
      "eff rank: exp(entropy of normalised singular values); num rank: σ > max(n_q, n_k)·roundoff·σ_max "
      "(— : skipped above n = 2048)\n"
      "rel Frob = ‖A - A_ref‖_F / ‖A_ref‖_F; row KL = mean_i KL(A_i ‖ A_ref,i)\n";
  if (report.hasValues) text += "out diff = ‖AV - A_ref V‖_F / ‖A_ref V‖_F\n";
  if (anyMismatch) text += "* mass mismatch: the row and column targets differ in total; errors are against them.\n";
  return text;
}

nlohmann::json compareJson(const CompareReport& report) {
  nlohmann::json operators = nlohmann::json::array();
  for (size_t i = 0; i < report.rows.size(); ++i) {
    const CompareRow& row = report.rows[i];
    nlohmann::json entry = analysisJson(row.analysis);
    entry["index"] = i + 1;
    entry["label"] = row.label;
    entry["operator"] = row.op.toString();
    entry["family"] = row.op.family;
    entry["distance_to_reference"] = comparisonJson(row.distance);
    operators.push_back(entry);
  }
  return {{"source", report.source.toString()},
          {"precision", precisionName(report.precision)},
          {"n_q", report.nQueries},
          {"n_k", report.nKeys},
          {"d", report.headDim},
          {"plan_scale", "attention (A = n_q P; rows = queries)"},
          {"reference", {{"index", report.reference + 1}, {"operator", report.rows[report.reference].op.toString()}}},
          {"operators", operators}};
}

std::string compareCsv(const CompareReport& report) {
  const CsvRow header = {"index",
                         "label",
                         "operator",
                         "family",
                         "reference",
                         "seconds",
                         "row_err_max",
                         "row_err_mean",
                         "col_err_max",
                         "col_err_mean",
                         "mass_mismatch",
                         "entropy_mean",
                         "entropy_std",
                         "max_col_sum",
                         "gini",
                         "effective_rank",
                         "numerical_rank",
                         "rank_tolerance",
                         "relative_frobenius",
                         "max_abs",
                         "mean_row_kl",
                         "output_difference"};
  std::vector<CsvRow> rows;
  for (size_t i = 0; i < report.rows.size(); ++i) {
    const CompareRow& row = report.rows[i];
    const PlanAnalysis& a = row.analysis;
    const PlanComparison& d = row.distance;
    rows.push_back({std::to_string(i + 1),
                    row.label,
                    row.op.toString(),
                    row.op.family,
                    i == report.reference ? "true" : "false",
                    full(a.seconds),
                    full(a.errors.rowMax),
                    full(a.errors.rowMean),
                    full(a.errors.colMax),
                    full(a.errors.colMean),
                    a.massMismatch ? "true" : "false",
                    full(a.entropy.mean),
                    full(a.entropy.stddev),
                    full(a.columnMass.maxSum),
                    full(a.columnMass.gini),
                    a.rank ? full(a.rank->effective) : "",
                    a.rank ? std::to_string(a.rank->numerical) : "",
                    a.rank ? full(a.rank->tolerance) : "",
                    full(d.relativeFrobenius),
                    full(d.maxAbs),
                    full(d.meanRowKl),
                    d.outputDifference ? full(*d.outputDifference) : ""});
  }
  return encodeCsvTable(header, rows);
}

}  // namespace tl::cli
