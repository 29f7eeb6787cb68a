// `tlens compare`: several operators on one input, one table row per operator with every analysis of
// analysis/summary.h and the distances to a reference operator; optionally the same as JSON and CSV.
#include <algorithm>
#include <cctype>
#include <iostream>

#include "arguments.h"
#include "commands.h"
#include "common/errors.h"
#include "compare_report.h"
#include "input_options.h"
#include "io/atomic_file.h"
#include "session/engine.h"

namespace tl::cli {
namespace {

CommandLine compareCommandLine() {
  std::vector<OptionSpec> options = inputOptions();
  options.insert(
      options.end(),
      {{"ops", "SPECS", "operators separated by ';', e.g. \"softmax;sinkhorn:T=20;esp:tau=0.1;lot:r=8,seed=0\""},
       {"reference", "INDEX|FAMILY",
        "operator the distances are measured to: its position in --ops (1 = first, the default) or its family"},
       {"json", "FILE", "also write every number to FILE as JSON"},
       {"csv", "FILE", "also write the table to FILE as CSV (full precision)"}});
  return CommandLine("compare",
                     "Run several operators on one input and compare their plans: marginal errors, entropy, column "
                     "mass, rank, and distances to a reference operator.",
                     std::move(options));
}

std::string trimmed(const std::string& text) {
  const auto first = text.find_first_not_of(" \t");
  return first == std::string::npos ? "" : text.substr(first, text.find_last_not_of(" \t") - first + 1);
}

// "softmax; sinkhorn:T=20" → {"softmax", "sinkhorn:T=20"}.
std::vector<std::string> splitOps(const std::string& text) {
  std::vector<std::string> labels;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t semicolon = std::min(text.find(';', start), text.size());
    labels.push_back(trimmed(text.substr(start, semicolon - start)));
    if (labels.back().empty())
      throw InvalidArgument("--ops: operator " + std::to_string(labels.size()) +
                            " is empty; separate operators with single ';', e.g. \"softmax;sinkhorn:T=20\"");
    start = semicolon + 1;
  }
  return labels;
}

// --reference: a 1-based position in --ops, or the family of exactly one of the operators.
size_t referenceIndex(const std::string& text, const std::vector<OperatorSpec>& ops) {
  if (!text.empty() && std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isdigit(c); })) {
    const size_t index = text.size() > 9 ? 0 : size_t(std::stoul(text));
    if (index < 1 || index > ops.size())
      throw InvalidArgument("--reference: " + text + " is not an operator position; expected 1.." +
                            std::to_string(ops.size()) + " (the order of --ops)");
    return index - 1;
  }
  std::vector<size_t> matches;
  for (size_t i = 0; i < ops.size(); ++i)
    if (ops[i].family == text) matches.push_back(i);
  if (matches.size() == 1) return matches[0];
  throw InvalidArgument("--reference: " +
                        (matches.empty()
                             ? "no operator of family '" + text + "' in --ops"
                             : "family '" + text + "' appears " + std::to_string(matches.size()) + " times in --ops") +
                        "; give a position 1.." + std::to_string(ops.size()) + " instead");
}

CompareReport runComparison(const Session& session, const std::vector<std::string>& labels, size_t reference) {
  const SessionResult result = runSession(session);
  CompareReport report;
  report.source = session.source;
  report.precision = session.precision;
  report.nQueries = result.input->nQueries();
  report.nKeys = result.input->nKeys();
  report.headDim = result.input->headDim();
  report.hasValues = result.input->V.has_value();
  report.reference = reference;
  const PlanResult<double>& referenceResult = result.runs[reference].result;
  for (size_t i = 0; i < result.runs.size(); ++i) {
    const OperatorRun& run = result.runs[i];
    report.rows.push_back({labels[i], run.spec, analyzePlan(run.result, unitRoundoff(session.precision)),
                           comparePlans(run.result, referenceResult)});
  }
  return report;
}

}  // namespace

int compareCommand(const Args& args) {
  CommandLine cl = compareCommandLine();
  cl.parse(args);
  if (cl.helpRequested()) {
    std::cout << cl.usage() << "\n" << operatorsHelp() << "\n" << sourcesHelp();
    return 0;
  }
  Session session;
  const std::vector<std::string> labels = splitOps(cl.required("ops"));
  for (const auto& label : labels) session.operators.push_back(OperatorRegistry::builtin().parse(label));
  const size_t reference = referenceIndex(cl.get("reference").value_or("1"), session.operators);
  session.precision = precisionFrom(cl);
  session.device = deviceFrom(cl);
  session.source = sourceFrom(cl);

  const CompareReport report = runComparison(session, labels, reference);
  if (const auto path = cl.get("json")) writeFileAtomically(*path, compareJson(report).dump(2) + "\n");
  if (const auto path = cl.get("csv")) writeFileAtomically(*path, compareCsv(report));
  std::cout << compareText(report);
  return 0;
}

}  // namespace tl::cli
