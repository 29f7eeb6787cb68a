#include "latency_benchmark.h"

#include <QEventLoop>
#include <QGuiApplication>
#include <QSlider>
#include <QTimer>
#include <algorithm>
#include <chrono>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cuda/backend.h"
#include "io/atomic_file.h"
#include "main_window.h"
#include "operator_panel.h"
#include "session_files.h"

namespace tl {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int kTimeoutMs = 60000;

long long budgetOf(const SessionResult& r) { return getInt(r.session.operators.front().params, "T"); }

// Runs the event loop until the window shows a result whose budget is T (or the timeout passes).
std::shared_ptr<const SessionResult> waitForBudget(MainWindow& window, long long T) {
  std::shared_ptr<const SessionResult> shown;
  QEventLoop loop;
  auto connection = QObject::connect(&window, &MainWindow::resultShown, &loop,
                                     [&](std::shared_ptr<const SessionResult> r) {
                                       if (budgetOf(*r) != T) return;
                                       shown = std::move(r);
                                       loop.quit();
                                     });
  QTimer::singleShot(kTimeoutMs, &loop, &QEventLoop::quit);
  if (!window.lastResult() || budgetOf(*window.lastResult()) != T) loop.exec();
  else shown = window.lastResult();
  QObject::disconnect(connection);
  return shown;
}

nlohmann::ordered_json summary(std::vector<double> ms) {
  std::sort(ms.begin(), ms.end());
  auto quantile = [&](double q) { return ms[size_t(std::min<double>(ms.size() - 1, q * (ms.size() - 1) + 0.5))]; };
  return {{"median", quantile(0.5)}, {"p90", quantile(0.9)}, {"max", ms.back()}, {"min", ms.front()}};
}

}  // namespace

int runLatencyBenchmark(const LatencyOptions& options) {
  Session session = pointCloudSession();
  session.source.params["n"] = static_cast<long long>(options.n);
  session.operators.front().params["T"] = 10LL;
  MainWindow window(session);
  window.show();
  if (!waitForBudget(window, 10)) {
    std::cerr << "transportlens: the first result did not arrive within " << kTimeoutMs / 1000 << " s\n";
    return 1;
  }
  auto* slider = window.operatorPanel()->findChild<QSlider*>("slider:T");
  if (!slider) {
    std::cerr << "transportlens: the operator panel has no T slider\n";
    return 1;
  }

  // Budgets 11, 14, ..., 98: every move is a new value, and the work per move grows as a user drags.
  std::vector<long long> budgets;
  std::vector<double> latencyMs, computeMs, overheadMs;
  for (int k = 0; k < options.moves; ++k) budgets.push_back(11 + 3 * k);
  for (long long T : budgets) {
    const auto start = Clock::now();
    slider->setValue(int(T));
    auto result = waitForBudget(window, T);
    if (!result) {
      std::cerr << "transportlens: no result for T=" << T << " within " << kTimeoutMs / 1000 << " s\n";
      return 1;
    }
    latencyMs.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
    computeMs.push_back(result->runs.front().result.seconds * 1e3);
    // What the window adds on top of the Engine's own work: queueing, copying into the views, drawing.
    overheadMs.push_back(latencyMs.back() - result->seconds * 1e3);
  }

  const nlohmann::ordered_json report = {
      {"benchmark", "slider-to-heatmap latency"},
      {"source", session.source.toString()},
      {"operator", "sinkhorn"},
      {"n", options.n},
      {"T_values", budgets},
      {"moves", options.moves},
      {"latency_ms", summary(latencyMs)},
      {"operator_compute_ms", summary(computeMs)},
      {"gui_overhead_ms", summary(overheadMs)},
      {"qt_platform", QGuiApplication::platformName().toStdString()},
      {"backend", backendLabel()}};
  const std::string text = report.dump(2) + "\n";
  std::cout << text;
  if (!options.jsonPath.isEmpty()) writeFileAtomically(options.jsonPath.toStdString(), text);
  return 0;
}

}  // namespace tl
