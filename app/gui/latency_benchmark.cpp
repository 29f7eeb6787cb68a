#include "latency_benchmark.h"

#include <QCoreApplication>
#include <QEventLoop>
#include <QGuiApplication>
#include <QSlider>
#include <QSpinBox>
#include <QTimer>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <functional>
#include <iostream>
#include <nlohmann/json.hpp>

#include "common/errors.h"
#include "common/parallel.h"
#include "cuda/backend.h"
#include "io/atomic_file.h"
#include "session/backend_choice.h"
#include "ops/registry.h"
#include "widgets/panels/operator_panel.h"
#include "widgets/panels/param_slider.h"
#include "widgets/shell/main_window.h"
#include "widgets/shell/session_files.h"

namespace tl {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int kTimeoutMs = 60000;

using ResultTest = std::function<bool(const SessionResult&)>;

long long budgetOf(const SessionResult& r) { return getInt(r.session.operators.front().params, "T"); }

// Runs the event loop until the window shows a result that passes `wanted` (or the timeout passes), then
// lets the views paint it. A failed computation ends the benchmark with its message (e.g. diff on the
// three-dimensional cloud: an odd head dimension).
std::shared_ptr<const SessionResult> waitForResult(MainWindow& window, const ResultTest& wanted) {
  std::shared_ptr<const SessionResult> shown;
  QString failure;
  QEventLoop loop;
  auto connection = QObject::connect(&window, &MainWindow::resultShown, &loop,
                                     [&](std::shared_ptr<const SessionResult> r) {
                                       if (!wanted(*r)) return;
                                       shown = std::move(r);
                                       loop.quit();
                                     });
  auto failed = QObject::connect(&window, &MainWindow::computationFailed, &loop, [&](const QString& message) {
    failure = message;
    loop.quit();
  });
  QTimer::singleShot(kTimeoutMs, &loop, &QEventLoop::quit);
  if (!window.lastResult() || !wanted(*window.lastResult())) loop.exec();
  else shown = window.lastResult();
  QObject::disconnect(connection);
  QObject::disconnect(failed);
  if (!failure.isEmpty()) throw Error("the computation failed: " + failure.toStdString());
  QCoreApplication::processEvents();  // queued replots and paint events of the views
  return shown;
}

// The 1-, 5- and 15-minute load averages (Linux), so a figure measured on a busy machine says so; empty elsewhere.
nlohmann::ordered_json loadAverage() {
  std::ifstream file("/proc/loadavg");
  double one = 0, five = 0, fifteen = 0;
  if (!(file >> one >> five >> fifteen)) return nullptr;
  return {one, five, fifteen};
}

nlohmann::ordered_json summary(std::vector<double> ms) {
  std::sort(ms.begin(), ms.end());
  auto quantile = [&](double q) { return ms[size_t(std::min<double>(ms.size() - 1, q * (ms.size() - 1) + 0.5))]; };
  return {{"median", quantile(0.5)}, {"p90", quantile(0.9)}, {"max", ms.back()}, {"min", ms.front()}};
}

// One change in the window: what it sets, and how to recognise its result.
struct Move {
  std::string label;
  std::function<void()> apply;
  ResultTest shows;
};

struct Timings {
  std::vector<double> latencyMs, computeMs, engineMs, overheadMs, drawMs;
  std::vector<double> deviceMs;  // per move: the GPU run's own time (uploads, kernels, downloads); NaN on the CPU
};

// Applies each move and times it until its result is on screen; false (after saying which) on a timeout.
bool timeMoves(MainWindow& window, const std::vector<Move>& moves, Timings& t) {
  for (const Move& move : moves) {
    const auto start = Clock::now();
    move.apply();
    const auto result = waitForResult(window, move.shows);
    if (!result) {
      std::cerr << "transportlens: no result for " << move.label << " within " << kTimeoutMs / 1000 << " s\n";
      return false;
    }
    t.latencyMs.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
    const PlanResult<double>& run = result->runs.front().result;
    t.computeMs.push_back(run.seconds * 1e3);
    t.deviceMs.push_back(run.backend == Backend::Cuda ? run.seconds * 1e3 : std::nan(""));
    t.engineMs.push_back(result->seconds * 1e3);  // the whole request: model re-run, operators, analyses
    // What the window adds on top of the Engine's own work: queueing, copying into the views, drawing.
    t.overheadMs.push_back(t.latencyMs.back() - t.engineMs.back());
    // Of that, the views' drawing (the status bar's "draw"); the rest is queueing, the paint and the flush.
    t.drawMs.push_back(window.lastDrawMs());
  }
  return true;
}

template <class T>
T* child(MainWindow& window, const char* name) {
  T* widget = window.findChild<T*>(name);
  if (!widget) throw Error(std::string("the window has no control named ") + name);
  return widget;
}

// The parameter a cloud run moves: the one asked for, else T, else the operator's first numeric parameter.
std::string movedParameter(const OperatorSpec& op, const QString& asked) {
  const ParamSchema& schema = OperatorRegistry::builtin().get(op.family).schema;
  if (!asked.isEmpty()) {
    const ParamSpec* spec = schema.find(asked.toStdString());
    if (!spec || (spec->type != ParamType::Int && spec->type != ParamType::Real))
      throw InvalidArgument("--param " + asked.toStdString() + ": " + op.family + " has no numeric parameter of that name");
    return spec->name;
  }
  if (schema.find("T")) return "T";
  for (const ParamSpec& spec : schema.specs())
    if (spec.type == ParamType::Int || spec.type == ParamType::Real) return spec.name;
  throw InvalidArgument("--measure-latency moves a numeric parameter of the operator, and " + op.family +
                        " has none; time it through another family or the model scenario");
}

// Moves of one operator slider, each to a new value: an integer parameter through start + 1, + 4, + 7, …
// (the work per move grows as a user drags T), a real one across its slider's range. Each move is recognised
// by the value the slider's control reports after it.
std::vector<Move> parameterMoves(MainWindow& window, const std::string& name, int count) {
  auto* panel = window.findChild<OperatorPanel*>();
  if (!panel) throw Error("the window has no operator panel");
  auto* slider = panel->findChild<QSlider*>(QString::fromStdString("slider:" + name));
  auto* control = slider ? qobject_cast<ParamSlider*>(slider->parentWidget()) : nullptr;
  if (!control) throw Error("the operator panel has no slider for " + name);
  const int lo = slider->minimum(), hi = slider->maximum(), start = slider->value();
  const bool integer = control->spec().type == ParamType::Int;
  const int stride = integer ? 3 : std::max(1, (hi - lo) / (count + 1));
  std::vector<Move> moves;
  for (int k = 0; k < count; ++k) {
    const int position = lo + (start - lo + (integer ? 1 : stride) + k * stride) % (hi - lo + 1);
    auto expected = std::make_shared<double>(0);
    moves.push_back({name + " at slider position " + std::to_string(position),
                     [slider, control, position, expected] {
                       slider->setValue(position);
                       *expected = control->value();
                     },
                     [name, expected](const SessionResult& r) {
                       const double got = getReal(r.session.operators.front().params, name);
                       return std::abs(got - *expected) <= 1e-12 * std::max(1.0, std::abs(*expected));
                     }});
  }
  return moves;
}

// Layer, head and the operator's budget in turn, each to a value the window does not show yet, so every
// move re-runs the model from the changed layer (layer, T) or re-reads another head (head).
std::vector<Move> modelMoves(MainWindow& window, int count, int layers, int heads) {
  QSpinBox* layerBox = child<QSpinBox>(window, "modelLayer");
  QSpinBox* headBox = child<QSpinBox>(window, "modelHead");
  QSlider* slider = child<QSlider>(window, "slider:T");
  std::vector<Move> moves;
  int layer = layerBox->value(), head = headBox->value();
  long long T = budgetOf(*window.lastResult());
  for (int k = 0; k < count; ++k) {
    switch (k % 3) {
      case 0:
        layer = (layer + 1) % layers;
        moves.push_back({"layer " + std::to_string(layer), [layerBox, layer] { layerBox->setValue(layer); },
                         [layer](const SessionResult& r) { return r.session.source.model.layer == layer; }});
        break;
      case 1:
        head = (head + 1) % heads;
        moves.push_back({"head " + std::to_string(head), [headBox, head] { headBox->setValue(head); },
                         [head](const SessionResult& r) { return r.session.source.model.head == head; }});
        break;
      default:
        T = T % 20 + 1;
        moves.push_back({"T=" + std::to_string(T), [slider, T] { slider->setValue(int(T)); },
                         [T](const SessionResult& r) { return budgetOf(r) == T; }});
    }
  }
  return moves;
}

}  // namespace

int runLatencyBenchmark(const LatencyOptions& options) {
  const bool model = options.scenario == LatencyScenario::Model;
  Session session = model ? checkpointSession() : pointCloudSession();
  std::string moved;
  if (!model) {
    session.source.params["n"] = static_cast<long long>(options.n);
    session.operators = {OperatorRegistry::builtin().parse(options.op.toStdString())};
    session.device = options.device;
    moved = movedParameter(session.operators.front(), options.param);
  }
  if (options.precision) session.precision = *options.precision;
  const nlohmann::ordered_json loadBefore = loadAverage();
  MainWindow window(session);
  window.resize(1600, 1000);
  window.show();
  const auto first = waitForResult(window, [model](const SessionResult& r) { return !model || r.model != nullptr; });
  if (!first) {
    std::cerr << "transportlens: the first result did not arrive within " << kTimeoutMs / 1000 << " s\n";
    return 1;
  }
  Timings t;
  const std::vector<Move> moves =
      model ? modelMoves(window, options.moves, first->model->config.numLayers, first->model->config.numHeads)
            : parameterMoves(window, moved, options.moves);
  if (!timeMoves(window, moves, t)) return 1;

  nlohmann::ordered_json report = {
      {"benchmark", model ? "layer/head/operator change to redrawn [CLS] maps" : "slider-to-heatmap latency"},
      {"source", session.source.toString()},
      {"operator", session.operators.front().toString()}};
  std::vector<std::string> labels;
  for (const Move& m : moves) labels.push_back(m.label);
  if (model) {
    report["swap"] = swapScopeName(session.swapScope);
  } else {
    report["n"] = options.n;
    report["moved"] = moved;
    report["device"] = deviceChoiceName(options.device);
  }
  report["precision"] = precisionName(session.precision);
  report["threads"] = parallelThreads();
  report["load_average_before"] = loadBefore;
  report["load_average_after"] = loadAverage();
  report["moves"] = labels;
  report["latency_ms"] = summary(t.latencyMs);
  report["operator_compute_ms"] = summary(t.computeMs);
  report["result_device"] = deviceLabel(window.lastResult()->runs.front().result.backend);
  report["engine_ms"] = summary(t.engineMs);
  report["gui_overhead_ms"] = summary(t.overheadMs);
  report["views_draw_ms"] = summary(t.drawMs);
  // Per move, so a GPU run's device time sits beside the latency it is part of (null where the CPU ran).
  std::vector<double> onDevice;
  nlohmann::ordered_json samples = nlohmann::ordered_json::array();
  for (size_t k = 0; k < moves.size(); ++k) {
    nlohmann::ordered_json sample = {{"move", moves[k].label}, {"latency_ms", t.latencyMs[k]}, {"device_ms", nullptr},
                                     {"views_draw_ms", t.drawMs[k]}};
    if (!std::isnan(t.deviceMs[k])) {
      sample["device_ms"] = t.deviceMs[k];
      onDevice.push_back(t.deviceMs[k]);
    }
    samples.push_back(sample);
  }
  if (!onDevice.empty()) report["device_ms"] = summary(onDevice);
  report["samples"] = samples;
  report["qt_platform"] = QGuiApplication::platformName().toStdString();
  report["backend"] = backendLabel();
  const std::string text = report.dump(2) + "\n";
  std::cout << text;
  if (!options.jsonPath.isEmpty()) writeFileAtomically(options.jsonPath.toStdString(), text);
  return 0;
}

}  // namespace tl
