#include "widgets/shell/main_window.h"

#include <QDockWidget>
#include <QElapsedTimer>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QProgressBar>
#include <QPushButton>
#include <QScrollArea>
#include <QShortcut>
#include <QStatusBar>
#include <QTimer>
#include <QThreadPool>
#include <algorithm>
#include <cmath>
#include <utility>

#include "cuda/backend.h"
#include "session/backend_choice.h"
#include "widgets/panels/operator_panel.h"
#include "widgets/panels/source_panel.h"
#include "widgets/shell/engine_bridge.h"
#include "widgets/shell/status_timing.h"
#include "widgets/shell/view_factory.h"
#include "widgets/views/rank_decay_view.h"

namespace tl {
namespace {

// Docks that join another's place as tabs: the [CLS] maps (a wide figure) the bottom tabs, the prediction
// the 3-D view's place, which has nothing to draw for a checkpoint. raiseModelViews brings them up.
const std::map<std::string, std::string> kTabbedWith = {{"cls", "compare"}, {"prediction", "cloud3d"}};

// A model session lists the model views, so `tlens render` of the saved session draws them too.
bool listsView(const Session& session, const std::string& name) {
  return std::find(session.views.begin(), session.views.end(), name) != session.views.end();
}

// The Engine computes rank decay only for sessions that list its view: the view's "live" switch.
void setViewListed(Session& session, const std::string& name, bool listed) {
  session.views.erase(std::remove(session.views.begin(), session.views.end(), name), session.views.end());
  if (listed) session.views.push_back(name);
}

void includeModelViews(Session& session) {
  if (session.source.kind != SourceSpec::Kind::Model) return;
  for (const char* name : {"cls", "prediction"})
    if (std::find(session.views.begin(), session.views.end(), name) == session.views.end()) session.views.push_back(name);
}

}  // namespace

MainWindow::MainWindow(const Session& session, const QString& path, QWidget* parent) : QMainWindow(parent) {
  setWindowTitle("TransportLens");
  engine_ = new EngineBridge(this);
  auto coalescing = [this](void (MainWindow::*slot)()) {
    auto* timer = new QTimer(this);
    timer->setSingleShot(true);
    timer->setInterval(0);
    connect(timer, &QTimer::timeout, this, slot);
    return timer;
  };
  submitTimer_ = coalescing(&MainWindow::sendRequest);
  drawTimer_ = coalescing(&MainWindow::showResult);
  connect(engine_, &EngineBridge::resultReady, this, &MainWindow::receiveResult);
  connect(engine_, &EngineBridge::failed, this, &MainWindow::showError);
  connect(engine_, &EngineBridge::progress, this, [this](quint64 id, double fraction, const QString& stage) {
    if (id != latestRequest_ || id <= cancelledThrough_ || compiling_) return;  // a compilation owns the bar
    busy_->setText(tr("computing %1… %2%").arg(stage).arg(int(fraction * 100)));
    // Work that reports progress (a checkpoint loading, model layers, training) gets a bar; quick
    // computations that report nothing finish before one would be worth showing.
    progress_->setValue(int(std::lround(fraction * progress_->maximum())));
    progress_->show();
  });
  buildDocks();
  buildMenus();
  buildStatusBar();
  resize(1500, 950);  // after the docks: building them lays the window out on the way, at other sizes

  connect(sourcePanel_, &SourcePanel::sourceChanged, this, [this](const SourceSpec& source) {
    stopUsingCompiledAsapOn(source);
    session_.source = source;
    includeModelViews(session_);
    submit();
  });
  connect(sourcePanel_, &SourcePanel::swapScopeChanged, this, [this](SwapScope scope) {
    session_.swapScope = scope;
    if (session_.source.kind == SourceSpec::Kind::Model) submit();
  });
  setAcceptDrops(true);
  connect(operatorPanel_, &OperatorPanel::operatorsChanged, this, [this] {
    session_.operators = operatorPanel_->operators();
    submit();
  });
  connect(operatorPanel_, &OperatorPanel::precisionChanged, this, [this](Precision precision) {
    session_.precision = precision;
    submit();
  });
  connect(operatorPanel_, &OperatorPanel::deviceChanged, this, [this](DeviceChoice device) {
    session_.device = device;
    submit();
  });
  if (auto* rankDecay = qobject_cast<RankDecayView*>(view("rank_decay")))
    connect(rankDecay, &RankDecayView::settingsEdited, this,
            [this](const rankdecay::RankDecaySettings& settings, bool live) {
              session_.rankDecay = settings;
              setViewListed(session_, "rank_decay", live);
              submit();
            });
  loadSession(session, path);
}

// A compilation still running stops first: its worker posts back to this window.
MainWindow::~MainWindow() {
  if (compiling_) compiling_->cancel();
  if (compileWorker_) compileWorker_->waitForDone();
}

// The plan heatmap is the centre; panels on the left, convergence and 3-D on the right.
void MainWindow::buildDocks() {
  setDockNestingEnabled(true);
  // The panels run the full height on the left; the bottom tabs span the plan and the right column.
  setCorner(Qt::BottomLeftCorner, Qt::LeftDockWidgetArea);
  auto dock = [this](const QString& title, QWidget* content, Qt::DockWidgetArea area, const QString& id) {
    auto* d = new QDockWidget(title, this);
    d->setObjectName(id);
    d->setWidget(content);
    addDockWidget(area, d);
    // A view that skipped results while its tab was behind another draws the newest when raised.
    if (auto* v = qobject_cast<View*>(content))
      connect(d, &QDockWidget::visibilityChanged, v, [v](bool visible) {
        if (visible) v->drawPendingWhenOnScreen();
      });
    return d;
  };
  // The panels scroll vertically: two operator forms (compare mode) are taller than a screen, and the model source
  // page with its thumbnails and the operator form together are taller than the left column of a 1000-pixel
  // screen, which otherwise squeezed the thumbnails' captions away.
  auto scrolling = [this](QWidget* panel) {
    auto* scroll = new QScrollArea(this);
    scroll->setWidget(panel);
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    return scroll;
  };
  sourcePanel_ = new SourcePanel(this);
  operatorPanel_ = new OperatorPanel(this);
  sourceDock_ = dock(tr("Source"), scrolling(sourcePanel_), Qt::LeftDockWidgetArea, "sourceDock");
  operatorDock_ = dock(tr("Operator"), scrolling(operatorPanel_), Qt::LeftDockWidgetArea, "operatorDock");
  splitDockWidget(sourceDock_, operatorDock_, Qt::Vertical);

  // Plan in the centre; convergence and 3-D stacked on the right; the comparison and the family views
  // (wide figures) as tabs along the bottom, raised when compare mode or the primary family calls for them.
  std::vector<QDockWidget*> rightDocks, bottomDocks;
  for (const std::string& name : knownViews()) {
    View* v = makeView(name, this).release();
    views_.push_back(v);
    if (name == "plan") {
      setCentralWidget(v);
      continue;
    }
    if (auto tabbed = kTabbedWith.find(name); tabbed != kTabbedWith.end()) {
      viewDocks_[name] = dock(v->title(), v, dockWidgetArea(viewDocks_.at(tabbed->second)),
                              QString::fromStdString(name) + "Dock");
      continue;
    }
    const bool bottom = name != "convergence" && name != "cloud3d";
    QDockWidget* d = dock(v->title(), v, bottom ? Qt::BottomDockWidgetArea : Qt::RightDockWidgetArea,
                          QString::fromStdString(name) + "Dock");
    (bottom ? bottomDocks : rightDocks).push_back(d);
    viewDocks_[name] = d;
  }
  connect(viewDocks_.at("certificates"), &QDockWidget::visibilityChanged, this, [this](bool visible) {
    if (visible) askForSkippedCertificates();
  });
  for (size_t i = 1; i < rightDocks.size(); ++i) splitDockWidget(rightDocks[i - 1], rightDocks[i], Qt::Vertical);
  for (size_t i = 1; i < bottomDocks.size(); ++i) tabifyDockWidget(bottomDocks[0], bottomDocks[i]);
  // Tabbed last: once the column is split (splitting moves a dock out of its tab group), and once the bottom
  // docks are tabs (a tabify can lay the window out, and side by side they would widen it); the partner stays up.
  for (const auto& tabbed : kTabbedWith) {
    tabifyDockWidget(viewDocks_.at(tabbed.second), viewDocks_.at(tabbed.first));
    viewDocks_.at(tabbed.second)->raise();
  }
  resizeDocks({sourceDock_}, {330}, Qt::Horizontal);
  if (!rightDocks.empty()) resizeDocks({rightDocks.front()}, {520}, Qt::Horizontal);
  if (!bottomDocks.empty()) resizeDocks({bottomDocks.front()}, {400}, Qt::Vertical);
}

void MainWindow::fitLeftColumn() {
  resizeDocks({sourceDock_, operatorDock_}, {sourcePanel_->sizeHint().height(), operatorPanel_->sizeHint().height()},
              Qt::Vertical);
}

// Raises the view that explains the new result, only when what it shows changes (compare mode switched,
// or another primary family), so a tab the user picked stays up while sliders move.
void MainWindow::raiseRelevantView(const SessionResult& result) {
  if (result.runs.empty()) return;
  // Rank decay computes only when the user switched it on (or the session lists it): its tab comes first.
  const std::string key = result.rankDecay            ? std::string("rank_decay")
                          : result.runs.size() > 1    ? std::string("compare")
                                                      : result.runs.front().spec.family;
  if (key == raisedFor_) return;
  raisedFor_ = key;
  // In a model session the [CLS] maps keep the bottom tabs; only turning compare mode on takes them over.
  if (result.model && key != "compare") return;
  auto it = viewDocks_.find(key);
  if (it == viewDocks_.end()) return;
  it->second->raise();
  // The bottom tabs hold wide, multi-panel figures: give them room when they come up.
  // (Rank decay's four panels and their legend need more than the others.)
  const int wanted = key == "rank_decay" ? 560 : 420;
  if (dockWidgetArea(it->second) == Qt::BottomDockWidgetArea && it->second->height() < wanted)
    resizeDocks({it->second}, {wanted}, Qt::Vertical);
}

void MainWindow::raiseModelViews(bool model) {
  if (model == modelViewsRaised_) return;
  modelViewsRaised_ = model;
  for (const auto& tabbed : kTabbedWith) viewDocks_.at(model ? tabbed.first : tabbed.second)->raise();
  // The [CLS] maps are the figure of a model session: the bottom tabs get most of the window's height.
  if (model) resizeDocks({viewDocks_.at("cls")}, {height() * 9 / 20}, Qt::Vertical);
}

void MainWindow::buildMenus() {
  QMenu* file = menuBar()->addMenu(tr("&File"));
  file->addAction(tr("&Open…"), QKeySequence::Open, this, &MainWindow::chooseFileToOpen)->setObjectName("openFile");
  file->addAction(tr("&Save session"), QKeySequence::Save, this, [this] { saveSessionFile(false); });
  file->addAction(tr("Save session &as…"), QKeySequence::SaveAs, this, [this] { saveSessionFile(true); });
  file->addSeparator();
  file->addAction(tr("Open .&npy…"), this, [this] { sourcePanel_->openNpy(); });
  addCheckpointActions(file);
  file->addSeparator();
  QMenu* exportMenu = file->addMenu(tr("&Export view"));
  for (View* v : views_) {
    QAction* action = exportMenu->addAction(v->title() + "…", this, [this, v] { exportView(v); });
    action->setObjectName(QString::fromStdString("export:" + v->viewName()));
  }
  file->addAction(tr("Export &plan as .npy / .csv…"), this, &MainWindow::exportPlanFile);
  file->addSeparator();
  file->addAction(tr("&Quit"), QKeySequence::Quit, this, &QWidget::close);

  buildModelMenu();
  viewMenu_ = menuBar()->addMenu(tr("&View"));
  for (QDockWidget* d : findChildren<QDockWidget*>()) viewMenu_->addAction(d->toggleViewAction());
}

void MainWindow::buildStatusBar() {
  backend_ = new QLabel(QString::fromStdString(backendLabel()), this);
  backend_->setObjectName("statusBackend");
  resultDevice_ = new QLabel(this);
  resultDevice_->setObjectName("statusResultDevice");
  size_ = new QLabel(this);
  timing_ = new QLabel(this);
  timing_->setObjectName("statusTiming");
  marginal_ = new QLabel(this);
  busy_ = new QLabel(this);
  busy_->setObjectName("statusBusy");
  cancel_ = new QPushButton(tr("Cancel"), this);
  cancel_->setObjectName("cancelComputation");
  cancel_->setToolTip(tr("Stop this computation and keep the last result on screen (Esc)"));
  cancel_->hide();
  connect(cancel_, &QPushButton::clicked, this, &MainWindow::cancelComputation);
  progress_ = new QProgressBar(this);
  progress_->setObjectName("statusProgress");
  progress_->setRange(0, 1000);
  progress_->setMaximumWidth(160);
  progress_->setTextVisible(false);  // busy_ beside it says what runs and how far
  progress_->hide();
  // Esc anywhere in the window, as in a progress dialog; a computation that is not running ignores it.
  auto* escape = new QShortcut(QKeySequence(Qt::Key_Escape), this);
  connect(escape, &QShortcut::activated, this, [this] {
    if (!cancel_->isHidden()) cancelComputation();
  });
  marginal_->setObjectName("statusMarginal");
  marginal_->setToolTip(tr("max over rows and columns of |sum − target| in attention scale"));
  statusBar()->addWidget(busy_);
  statusBar()->addWidget(progress_);
  statusBar()->addWidget(cancel_);
  for (QLabel* l : {size_, timing_, marginal_, resultDevice_, backend_}) {
    l->setStyleSheet("QLabel { padding: 0 10px; }");
    statusBar()->addPermanentWidget(l);
  }
}

void MainWindow::loadSession(const Session& session, const QString& path) {
  session_ = session;
  sessionPath_ = path;
  setWindowTitle(path.isEmpty() ? "TransportLens" : "TransportLens — " + path);
  includeModelViews(session_);
  sourcePanel_->setSource(session_.source);
  sourcePanel_->setSwapScope(session_.swapScope, session_.swapLayers);
  if (session_.operators.empty()) session_.operators.push_back(operatorPanel_->spec());
  operatorPanel_->setOperators(session_.operators);
  operatorPanel_->setPrecision(session_.precision);
  operatorPanel_->setDevice(session_.device);
  fitLeftColumn();
  for (View* v : views_) {
    if (session_.viewState.contains(v->viewName())) v->restoreState(session_.viewState.at(v->viewName()));
  }
  if (auto* rankDecay = qobject_cast<RankDecayView*>(view("rank_decay")))
    rankDecay->setSettings(session_.rankDecay, listsView(session_, "rank_decay"));
  submit();
}

Session MainWindow::currentSession() const {
  Session s = session_;
  for (View* v : views_) s.viewState[v->viewName()] = v->saveState();
  return s;
}

View* MainWindow::view(const std::string& name) const {
  auto it = std::find_if(views_.begin(), views_.end(), [&](View* v) { return v->viewName() == name; });
  return it == views_.end() ? nullptr : *it;
}

void MainWindow::submit() { submitTimer_->start(); }

void MainWindow::sendRequest() {
  // The certificates only while their view is on screen (a tab behind another is not); raising it asks again.
  RunOptions options;
  options.certificates = view("certificates")->onScreen();
  latestRequest_ = engine_->submit(session_, options);
  busy_->setText(tr("computing…"));
  cancel_->show();
  emit sessionChanged();
}

void MainWindow::cancelComputation() {
  if (compiling_) {
    compiling_->cancel();
    busy_->setText(tr("cancelling the ASAP compilation…"));
    return;
  }
  submitTimer_->stop();
  drawTimer_->stop();
  incoming_.reset();
  engine_->cancelAll();
  cancelledThrough_ = latestRequest_;
  cancel_->hide();
  progress_->hide();
  busy_->setText(last_ ? tr("cancelled: showing the last result") : tr("cancelled"));
}

void MainWindow::showIdle(quint64 requestId) {
  if (requestId < latestRequest_ || compiling_) return;  // a newer request, or a compilation, still runs
  busy_->clear();
  cancel_->hide();
  progress_->hide();
}

void MainWindow::receiveResult(std::shared_ptr<const SessionResult> result) {
  if (result->requestId <= cancelledThrough_) return;  // finished as it was cancelled: the user asked not to see it
  if (incoming_ && incoming_->requestId > result->requestId) return;
  incoming_ = std::move(result);
  drawTimer_->start();  // results that arrive before the event loop turns are drawn once, the newest
}

void MainWindow::showResult() {
  if (!incoming_) return;
  const std::shared_ptr<const SessionResult> result = std::exchange(incoming_, nullptr);
  QElapsedTimer drawing;
  drawing.start();
  last_ = result;
  sourcePanel_->showModel(result->model.get());
  for (View* v : views_) v->present(result);
  raiseRelevantView(*result);
  raiseModelViews(result->model != nullptr);
  // Views the raising just brought up draw now, with the rest of this result.
  for (View* v : views_)
    if (v->onScreen()) v->drawPending();
  showIdle(result->requestId);
  lastDrawMs_ = double(drawing.nsecsElapsed()) / 1e6;
  showStatus(*result, lastDrawMs_);
  emit resultShown(result);
  askForSkippedCertificates();
}

void MainWindow::askForSkippedCertificates() {
  // A result computed while the Certificates view was hidden left its report out (sendRequest): once the view is
  // on screen, the same session again, with them.
  if (last_ && last_->certificatesSkipped && view("certificates")->onScreen()) submit();
}

void MainWindow::showStatus(const SessionResult& result, double drawMs) {
  if (result.runs.empty()) return;
  const PlanResult<double>& r = result.runs.front().result;
  const int nq = result.input ? result.input->nQueries() : int(r.plan.rows());
  const int nk = result.input ? result.input->nKeys() : int(r.plan.cols());
  size_->setText(nq == nk ? QStringLiteral("n = %1").arg(nq) : QStringLiteral("n_q = %1, n_k = %2").arg(nq).arg(nk));
  const StatusTiming timing = statusTiming(result, drawMs);
  timing_->setText(timing.text);
  timing_->setToolTip(timing.toolTip);
  const double error = std::max(r.errors.rowMax, r.errors.colMax);
  marginal_->setText(tr("%1 %2").arg(r.massMismatch ? tr("mass mismatch") : tr("marginal error")).arg(error, 0, 'e', 2));
  // Which device produced what is on screen; never silent when the CPU ran in place of the GPU.
  const QString device = QString::fromStdString(deviceLabel(r.backend));
  resultDevice_->setText(r.backendNote.empty() ? tr("result: %1").arg(device) : tr("result: %1 (GPU not used)").arg(device));
  resultDevice_->setToolTip(QString::fromStdString(r.backendNote));
  resultDevice_->setStyleSheet(r.backendNote.empty() ? "QLabel { padding: 0 10px; }"
                                                     : "QLabel { padding: 0 10px; color: #a04000; }");
}

// Engine failures come from live edits: one non-modal box (reused) so sliders keep working, and the
// last good result stays on screen.
void MainWindow::showError(quint64 requestId, const QString& message) {
  if (requestId <= cancelledThrough_) return;
  showIdle(requestId);
  reportError(tr("The computation failed"), message);
  if (requestId >= latestRequest_) emit computationFailed(message);
  // A GPU failure (no device, out of memory, a kernel fault) keeps the last result and offers the CPU.
  if (session_.device != DeviceChoice::Cpu) {
    if (!runOnCpu_) {
      runOnCpu_ = errorBox_->addButton(tr("Run on the CPU"), QMessageBox::AcceptRole);
      runOnCpu_->setObjectName("runOnCpu");
      connect(runOnCpu_, &QPushButton::clicked, this, [this] { operatorPanel_->setDevice(DeviceChoice::Cpu);
                                                              session_.device = DeviceChoice::Cpu;
                                                              submit(); });
    }
    runOnCpu_->show();
  } else if (runOnCpu_) {
    runOnCpu_->hide();
  }
}

void MainWindow::reportError(const QString& what, const QString& message) {
  statusBar()->showMessage(what + ": " + message, 10000);
  if (runOnCpu_) runOnCpu_->hide();
  if (!errorBox_) {
    errorBox_ = new QMessageBox(QMessageBox::Warning, "TransportLens", {}, QMessageBox::Ok, this);
    errorBox_->setWindowModality(Qt::NonModal);
  }
  errorBox_->setText(what);
  errorBox_->setInformativeText(message);
  errorBox_->show();
}

}  // namespace tl
