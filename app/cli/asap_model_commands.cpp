// `tlens asap-compile` and `tlens asap-eval` (docs/cli.md#asap-compile, #asap-eval): the ASAP compiler on a
// Sinkhorn checkpoint and its frozen-layer replacement table. core/model computes everything; this file
// parses the flags, prints and writes the reports.
#include <cstdio>
#include <iostream>

#include <nlohmann/json.hpp>

#include "arguments.h"
#include "commands.h"
#include "common/errors.h"
#include "io/atomic_file.h"
#include "model/asap_compiler.h"
#include "model/asap_evaluation.h"
#include "model_options.h"
#include "terminal_progress.h"
#include "text_table.h"

namespace tl::cli {
namespace {

CommandLine compileCommandLine() {
  std::vector<OptionSpec> options = checkpointOptions();
  options.insert(options.end(),
                 {{"calib", "SET", "calibration images, fashion-mnist:train|test:FIRST-LAST (default "
                                   "fashion-mnist:train:0-999); labels are not used"},
                  {"layers", "LIST", "layers to compile: comma-separated indices from 0, or all (default)"},
                  {"slices", "L", "slices per layer (default 64)"},
                  {"seed", "S", "slice bank seed; layer l uses S + l (default 0)"},
                  {"fit", "ls|kl", "least squares (default) or KL"},
                  {"features", "FAMILY", "potentials (default), raw, rank-displacement or predict-both (LS only; "
                                         "docs/operators/asap.md#feature-families)"},
                  {"lambda-b", "X", "ridge on the normalised risk (default 1e-4)"},
                  {"sequential", "", "calibrate each layer with the compiled layers before it in place"},
                  {"shared", "", "one slice bank and one beta shared by every compiled layer, fitted on all of them"},
                  {"out", "DIR", "folder of the compiled model: asap.safetensors and asap.json"}});
  return CommandLine("asap-compile",
                     "Compile a Sinkhorn checkpoint into ASAP layers: fit one beta per layer to the teacher's duals on "
                     "calibration images. Ctrl-C cancels; a sequential run keeps the layers finished so far.",
                     std::move(options), {{"CKPT", "checkpoint folder or weights file (a Sinkhorn teacher)"}});
}

CommandLine asapEvalCommandLine() {
  std::vector<OptionSpec> options = checkpointOptions();
  options.insert(options.end(), {{"compiled", "DIR", "a compiled model of CKPT (repeat for an LS and a KL fit)", true},
                                 {"split", "test|train", "Fashion-MNIST split (default test)"},
                                 {"limit", "N", "only the first N images"},
                                 {"json", "FILE", "also write every number to FILE as JSON"}});
  return CommandLine("asap-eval",
                     "Frozen-layer replacement table of compiled ASAP layers against their Sinkhorn teacher: per layer "
                     "time, output RMSE, attention error, marginal errors, break-even; accuracy and agreement.",
                     std::move(options), {{"CKPT", "the checkpoint the models were compiled from"}});
}

std::string fixed(double x, int digits) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", digits, x);
  return text;
}

std::string sci(double x) {
  char text[64];
  std::snprintf(text, sizeof text, "%.3g", x);
  return text;
}

int compile(const CommandLine& cl) {
  if (cl.positionals().size() != 1) throw InvalidArgument("asap-compile: give one checkpoint (see --help)");
  const std::string checkpoint = cl.positionals().front();
  AsapCompileOptions o;
  o.out = cl.required("out");
  if (const auto v = cl.get("calib")) o.calibration = *v;
  if (const auto v = cl.get("slices")) o.L = parsePositiveInt("--slices", *v);
  if (const auto v = cl.get("seed")) o.seed = parseUnsigned("seed", *v);
  if (const auto v = cl.get("fit")) o.fit = parseFitKind(*v);
  if (const auto v = cl.get("features")) o.features = parseAsapFeatures(*v);
  if (const auto v = cl.get("lambda-b")) o.lambdaB = parseReal("lambda-b", *v);
  o.sequential = cl.has("sequential");
  o.shared = cl.has("shared");
  const VitRunner runner = VitRunner::open(checkpoint, importOptionsFrom(cl));
  if (const auto v = cl.get("layers")) o.layers = parseLayers(*v, runner.config().numLayers);
  CompiledAsap compiled;
  {
    TerminalProgress progress;
    InterruptScope interrupts(progress.feedback());
    compiled = compileAsap(runner, checkpoint, o, progress.feedback());
  }
  const bool keySide = compiled.features == "predict-both";  // ĝ's fit too
  std::vector<TextTable::Column> columns = {{"layer"}, {"L"}, {"rows"}, {"R²"}, {"δ"}};
  if (keySide) columns.insert(columns.end(), {{"key R²"}, {"key δ"}});
  columns.insert(columns.end(), {{"lambda_b"}, {"lambda"}, {"fit s"}});
  TextTable table(columns);
  for (const auto& l : compiled.layers) {
    std::vector<std::string> row = {std::to_string(l.layer), std::to_string(l.slices.rows()), std::to_string(l.rows),
                                    fixed(l.r2, 4), sci(l.delta)};
    if (keySide) row.insert(row.end(), {fixed(l.keyR2, 4), sci(l.keyDelta)});
    row.insert(row.end(), {sci(l.lambdaB), sci(l.lambda), fixed(l.fitSeconds, 2)});
    table.addRow(row);
  }
  std::cout << "compiled " << compiled.layers.size() << " layer(s) of " << checkpoint << " (" << compiled.teacher
            << ", " << (compiled.sequential ? "sequential" : "parallel") << ", " << compiled.calibration << ", "
            << compiled.layers.front().fit << ", features " << compiled.features << ") into " << o.out << "\n"
            << table.render() << "use it: tlens eval " << checkpoint << " --swap \""
            << compiledAsapOperator(compiled, o.out) << "\"\n";
  return 0;
}

nlohmann::json metricsJson(const FrozenLayerMetrics& m) {
  nlohmann::json j = {{"ms", m.ms},           {"output_rmse", m.outputRmse}, {"attention_error", m.attentionError},
                      {"row_error_mean", m.rowMean}, {"row_error_max", m.rowMax}, {"col_error_mean", m.colMean},
                      {"col_error_max", m.colMax}};
  if (m.breakEven) j["break_even"] = *m.breakEven;
  if (m.fitR2) j["fit_r2"] = *m.fitR2;
  return j;
}

int evaluate(const CommandLine& cl) {
  if (cl.positionals().size() != 1) throw InvalidArgument("asap-eval: give one checkpoint (see --help)");
  const std::string checkpoint = cl.positionals().front();
  AsapEvaluationOptions o;
  o.compiled = cl.all("compiled");
  o.split = splitFrom(cl);
  o.limit = cl.has("limit") ? parsePositiveInt("--limit", *cl.get("limit")) : 0;
  const VitRunner runner = VitRunner::open(checkpoint, importOptionsFrom(cl));
  AsapEvaluation r;
  {
    TerminalProgress progress;
    InterruptScope interrupts(progress.feedback());
    r = evaluateCompiledAsap(runner, o, progress.feedback());
  }
  std::cout << checkpoint << " (" << r.teacher << "), " << r.images << " images: the teacher model's accuracy "
            << fixed(100 * r.teacherModelAccuracy, 2) << "%\n";
  TextTable overall({{"operator", TextTable::Align::Left}, {"ms/layer-batch"}, {"speed-up"}, {"output RMSE"},
                     {"attention err"}, {"row err"}, {"col err"}, {"accuracy %"}, {"agreement %"}, {"fit R²"}});
  const double teacherMs = r.rows.back().overall.ms;
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& row : r.rows) {
    overall.addRow({row.name, fixed(row.overall.ms / double(row.layers.size()), 3), fixed(teacherMs / row.overall.ms, 2),
                    sci(row.overall.outputRmse), sci(row.overall.attentionError), sci(row.overall.rowMean),
                    sci(row.overall.colMean), fixed(100 * row.accuracy, 2), fixed(100 * row.agreement, 2),
                    row.overall.fitR2 ? fixed(*row.overall.fitR2, 4) : ""});
    nlohmann::json layers = nlohmann::json::array();
    for (const auto& m : row.layers) {
      layers.push_back(metricsJson(m));
      layers.back()["layer"] = m.layer;
    }
    rows.push_back({{"name", row.name}, {"operator", row.op}, {"overall", metricsJson(row.overall)},
                    {"accuracy", row.accuracy}, {"agreement", row.agreement}, {"layers", layers}});
  }
  std::cout << "every compiled layer replaced (metrics: mean over layers; time: per layer):\n" << overall.render();
  TextTable perLayer({{"layer"}, {"operator", TextTable::Align::Left}, {"ms"}, {"output RMSE"}, {"attention err"},
                      {"row err"}, {"col err"}, {"break-even"}});
  for (size_t li = 0; li < r.layers.size(); ++li)
    for (const auto& row : r.rows) {
      const auto& m = row.layers[li];
      const bool fitted = row.name.rfind("ASAP", 0) == 0;
      perLayer.addRow({std::to_string(m.layer), row.name, fixed(m.ms, 3), sci(m.outputRmse), sci(m.attentionError),
                       sci(m.rowMean), sci(m.colMean),
                       !fitted ? "" : m.breakEven ? std::to_string(*m.breakEven) : "never"});
    }
  std::cout << "per layer (teacher upstream; head outputs A·V; marginal errors: mean |sum − 1|):\n" << perLayer.render();
  if (const auto json = cl.get("json")) {
    const nlohmann::json report = {{"checkpoint", checkpoint}, {"teacher", r.teacher}, {"images", r.images},
                                   {"split", o.split == FashionMnistPart::Train ? "train" : "test"},
                                   {"compiled", o.compiled}, {"layers", r.layers},
                                   {"teacher_model_accuracy", r.teacherModelAccuracy}, {"rows", rows}};
    writeFileAtomically(*json, report.dump(1) + "\n");
  }
  return 0;
}

}  // namespace

int asapCompileCommand(const Args& args) {
  CommandLine cl = compileCommandLine();
  cl.parse(args);
  if (cl.helpRequested()) {
    std::cout << cl.usage();
    return 0;
  }
  return compile(cl);
}

int asapEvalCommand(const Args& args) {
  CommandLine cl = asapEvalCommandLine();
  cl.parse(args);
  if (cl.helpRequested()) {
    std::cout << cl.usage();
    return 0;
  }
  return evaluate(cl);
}

}  // namespace tl::cli
