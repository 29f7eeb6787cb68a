// Model › Compile this checkpoint into ASAP… and Use the compiled ASAP layers (docs/gui.md#compiling-a-checkpoint-into-asap).
// The compiler (core/model, reached through the model seam) runs on a worker thread with a Feedback object; its
// progress and the Cancel button are the status bar's, the same ones a loading checkpoint uses. When it is done
// the compiled operator (asap:compiled=DIR) becomes the primary operator, swapped into the compiled layers, so
// the plan, [CLS] maps and prediction show the compiled model; unchecking the action brings the trained one back.
#include <QLabel>
#include <QMenuBar>
#include <QMetaObject>
#include <QProgressBar>
#include <QPushButton>
#include <QStatusBar>
#include <QThreadPool>
#include <algorithm>
#include <cmath>

#include "vit/model_backend.h"
#include "widgets/panels/operator_panel.h"
#include "widgets/panels/source_panel.h"
#include "widgets/shell/asap_compile_dialog.h"
#include "widgets/shell/main_window.h"
#include "widgets/views/model_captions.h"

namespace tl {

void MainWindow::buildModelMenu() {
  QMenu* model = menuBar()->addMenu(tr("&Model"));
  model->setObjectName("modelMenu");
  compileAction_ = model->addAction(tr("&Compile this checkpoint into ASAP…"), this, &MainWindow::chooseAsapCompileSettings);
  compileAction_->setObjectName("compileAsap");
  compileAction_->setToolTip(tr("Fit ASAP layers to this Sinkhorn checkpoint on calibration images, then swap them in"));
  useCompiledAction_ = model->addAction(tr("&Use the compiled ASAP layers"));
  useCompiledAction_->setObjectName("useCompiledAsap");
  useCompiledAction_->setCheckable(true);
  connect(useCompiledAction_, &QAction::triggered, this, &MainWindow::useCompiledAsap);
  // Enabled for what the window shows now: a checkpoint to compile, a compiled model of that checkpoint to use.
  connect(model, &QMenu::aboutToShow, this, [this] {
    const bool checkpoint = session_.source.kind == SourceSpec::Kind::Model && haveModelBackend();
    compileAction_->setEnabled(checkpoint && !compiling_);
    useCompiledAction_->setEnabled(checkpoint && compiledFor_ == session_.source.model.checkpoint);
  });
}

void MainWindow::chooseAsapCompileSettings() {
  if (session_.source.kind != SourceSpec::Kind::Model || compiling_) return;
  const std::string& checkpoint = session_.source.model.checkpoint;
  const int layers = last_ && last_->model ? last_->model->config.numLayers : 0;
  AsapCompileDialog dialog(checkpoint, layers, this);
  AsapCompileOptions remembered = compileOptions_;
  if (compiledFor_ != checkpoint) remembered.out.clear();  // another checkpoint: the folder beside it
  dialog.setOptions(remembered);
  if (dialog.exec() != QDialog::Accepted) return;
  compileAsap(dialog.options(), dialog.swapInWhenDone());
}

void MainWindow::compileAsap(const AsapCompileOptions& options, bool swapIn) {
  if (compiling_ || session_.source.kind != SourceSpec::Kind::Model) return;
  compileOptions_ = options;
  const std::string checkpoint = session_.source.model.checkpoint;
  auto feedback = std::make_shared<Feedback>([this](double fraction, const std::string& stage) {
    QMetaObject::invokeMethod(this, [this, fraction, text = QString::fromStdString(stage)] {
      showCompileProgress(fraction, text);
    }, Qt::QueuedConnection);
  });
  compiling_ = feedback;
  showCompileProgress(0, tr("loading the checkpoint"));
  if (!compileWorker_) {
    compileWorker_ = new QThreadPool(this);
    compileWorker_->setMaxThreadCount(1);
  }
  compileWorker_->start([this, feedback, checkpoint, options, swapIn] {
    AsapCompileOutcome outcome{checkpoint, options.out, false, {}, {}, swapIn};
    try {
      const CompiledAsap compiled = modelBackend().compileAsap(checkpoint, options, *feedback);
      outcome.message = QString::fromStdString(compiledAsapOperator(compiled, options.out));
      for (const auto& l : compiled.layers) outcome.layers.push_back(l.layer);
      outcome.ok = true;
    } catch (const Canceled&) {
      outcome.message = tr("cancelled");
    } catch (const std::exception& e) {
      outcome.message = e.what();
    }
    QMetaObject::invokeMethod(this, [this, outcome] { finishCompile(outcome); }, Qt::QueuedConnection);
  });
}

void MainWindow::showCompileProgress(double fraction, const QString& stage) {
  if (!compiling_) return;  // a late tick of a finished run
  busy_->setText(tr("compiling ASAP: %1… %2%").arg(stage).arg(int(fraction * 100)));
  progress_->setValue(int(std::lround(fraction * progress_->maximum())));
  progress_->show();
  cancel_->show();
}

void MainWindow::finishCompile(const AsapCompileOutcome& outcome) {
  const bool cancelled = compiling_ && compiling_->isCanceled();
  compiling_.reset();
  busy_->clear();
  cancel_->hide();
  progress_->hide();
  const QString dir = QString::fromStdString(outcome.dir);
  if (!outcome.ok) {
    if (cancelled)
      busy_->setText(tr("ASAP compilation cancelled: nothing was swapped in"));
    else
      reportError(tr("The ASAP compilation failed"), outcome.message);
    emit asapCompileFinished(false, dir, outcome.message);
    return;
  }
  compiledFor_ = outcome.checkpoint;
  compiledOperator_ = outcome.message.toStdString();
  compiledLayers_ = outcome.layers;
  std::sort(compiledLayers_.begin(), compiledLayers_.end());
  const int numLayers = last_ && last_->model ? last_->model->config.numLayers : 0;
  useCompiledAction_->setText(tr("&Use the compiled ASAP layers (%1)")
                                  .arg(int(compiledLayers_.size()) == numLayers ? tr("all %1").arg(numLayers)
                                                                                 : layerList(compiledLayers_)));
  statusBar()->showMessage(tr("Compiled layers %1 into %2").arg(layerList(compiledLayers_)).arg(dir), 10000);
  // Swapped in only while the window still shows that checkpoint.
  const bool sameCheckpoint =
      session_.source.kind == SourceSpec::Kind::Model && session_.source.model.checkpoint == compiledFor_;
  if (outcome.swapIn && sameCheckpoint) {
    if (useCompiledAction_->isChecked()) useCompiledAsap(false);  // an earlier compiled model is swapped in
    useCompiledAsap(true);
  }
  emit asapCompileFinished(true, dir, outcome.message);
}

void MainWindow::stopUsingCompiledAsapOn(const SourceSpec& source) {
  if (!useCompiledAction_->isChecked() || trainedOperators_.empty()) return;
  if (source.kind == SourceSpec::Kind::Model && source.model.checkpoint == compiledFor_) return;
  restoreTrainedOperator();
  operatorPanel_->setOperators(session_.operators);
  sourcePanel_->setSwapScope(session_.swapScope, session_.swapLayers);
}

void MainWindow::restoreTrainedOperator() {
  session_.operators = trainedOperators_;
  session_.swapScope = trainedScope_;
  session_.swapLayers = trainedSwapLayers_;
  trainedOperators_.clear();
  useCompiledAction_->setChecked(false);
  statusBar()->showMessage(tr("The compiled ASAP layers are swapped out"), 10000);
}

QString MainWindow::swappedInMessage(int numLayers) const {
  if (int(compiledLayers_.size()) == numLayers)
    return tr("Compiled ASAP swapped into all %1 layers").arg(numLayers);
  return tr("Compiled ASAP swapped into layers %1; the other layers keep the trained operator")
      .arg(layerList(compiledLayers_));
}

void MainWindow::useCompiledAsap(bool on) {
  // Checked exactly while the compiled model is swapped in (trainedOperators_ holds what it replaced).
  const bool swappedIn = !trainedOperators_.empty();
  const bool possible = on ? !swappedIn && !compiledOperator_.empty() && session_.source.kind == SourceSpec::Kind::Model
                           : swappedIn;
  useCompiledAction_->setChecked(possible ? on : swappedIn);
  if (!possible) return;
  if (on) {
    trainedOperators_ = session_.operators;
    trainedScope_ = session_.swapScope;
    trainedSwapLayers_ = session_.swapLayers;
    session_.operators.front() = OperatorRegistry::builtin().parse(compiledOperator_);
    const int numLayers = last_ && last_->model ? last_->model->config.numLayers : 0;
    if (int(compiledLayers_.size()) == numLayers) {
      session_.swapScope = SwapScope::AllLayers;
    } else {
      // Some layers only: exactly those take the compiled operator, the others keep the trained one. The plan
      // shows the compiled operator on the source's layer, so that moves to the first compiled layer when it is
      // not one.
      session_.swapScope = SwapScope::Listed;
      session_.swapLayers = compiledLayers_;
      if (std::find(compiledLayers_.begin(), compiledLayers_.end(), session_.source.model.layer) == compiledLayers_.end()) {
        session_.source.model.layer = compiledLayers_.front();
        sourcePanel_->setSource(session_.source);
      }
    }
    statusBar()->showMessage(swappedInMessage(numLayers), 10000);
  } else {
    restoreTrainedOperator();
  }
  operatorPanel_->setOperators(session_.operators);
  sourcePanel_->setSwapScope(session_.swapScope, session_.swapLayers);
  submit();
}

}  // namespace tl
