#pragma once
// The TransportLens window: source and operator docks that edit a Session, the views that draw its
// results, and the File menu. Edits are submitted to the Engine on the next turn of the event loop, so a
// burst of slider events makes one request (newer requests supersede older ones); results arrive on the GUI
// thread through EngineBridge, and the newest of those that arrived together is drawn once, by the views on
// screen (hidden views draw it when shown: View::present).
#include <QMainWindow>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ops/asap/compile_options.h"
#include "session/engine.h"

class QAction;
class QDockWidget;
class QDragEnterEvent;
class QDropEvent;
class QLabel;
class QMenu;
class QMessageBox;
class QProgressBar;
class QPushButton;
class QTimer;
class QThreadPool;

namespace tl {

class EngineBridge;
class OperatorPanel;
class SourcePanel;
class View;

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  // `path` names the session's file (empty: the built-in or an unsaved session).
  explicit MainWindow(const Session& session, const QString& path = {}, QWidget* parent = nullptr);
  ~MainWindow() override;

  // Shows `session` in the panels and views and computes it. `path` names its file (empty: unsaved).
  void loadSession(const Session& session, const QString& path = {});
  // The session as edited, with every view's current state.
  Session currentSession() const;

  View* view(const std::string& name) const;
  SourcePanel* sourcePanel() const { return sourcePanel_; }
  OperatorPanel* operatorPanel() const { return operatorPanel_; }
  std::shared_ptr<const SessionResult> lastResult() const { return last_; }
  // Milliseconds the views on screen took to draw the last result (their repaint follows in one paint event).
  double lastDrawMs() const { return lastDrawMs_; }

  // A file the user handed over, from File › Open or a drop: a session (.json) opens, a checkpoint or an image
  // becomes the model source, anything else is refused with a message. Failures are reported; the window and
  // the result on screen stay.
  void openFile(const QString& path);
  // Stops the computation in flight (the Cancel button, Esc); the last result stays on screen. While an ASAP
  // compilation runs, it stops that instead (nothing of an unfinished layer is written).
  void cancelComputation();

  // Model › Compile this checkpoint into ASAP… without its dialog: compiles the model source's checkpoint on a
  // worker thread, with progress and Cancel in the status bar, and swaps the compiled layers in when it is done
  // and `swapIn` holds (main_window_asap.cpp).
  void compileAsap(const AsapCompileOptions& options, bool swapIn);
  bool compilingAsap() const { return compiling_ != nullptr; }
  // Model › Use the compiled ASAP layers: on, the primary operator becomes the compiled model, swapped into every
  // compiled layer (scope "listed" when they are not all; the status bar says which, as does the menu entry);
  // off, the operators and swap scope from before come back.
  void useCompiledAsap(bool on);

 signals:
  // Every view on screen has drawn this result (hidden views draw it when they are shown).
  void resultShown(std::shared_ptr<const tl::SessionResult> result);
  // The latest request failed; the message is also in the error box, the last result stays on screen.
  void computationFailed(const QString& message);
  // The session changed: an edit, or another session loaded. The autosave listens.
  void sessionChanged();
  // An ASAP compilation ended: written to `dir`, or failed or cancelled with `message`.
  void asapCompileFinished(bool ok, const QString& dir, const QString& message);

 protected:
  // A checkpoint (folder or weights file) dropped on the window becomes the source; a PNG/JPEG its image.
  void dragEnterEvent(QDragEnterEvent* event) override;
  void dropEvent(QDropEvent* event) override;

 private:
  void buildDocks();
  // Shares the left column's height between the source and operator panels in proportion to their size hints:
  // the source panel's is that of its tallest page, the model page with its thumbnails, which otherwise got too
  // little of the column; a second operator form (compare mode) gives the operator panel more.
  void fitLeftColumn();
  void buildMenus();
  void buildStatusBar();
  void submit();  // on the next turn of the event loop
  void sendRequest();
  void receiveResult(std::shared_ptr<const SessionResult> result);
  void showIdle(quint64 requestId);  // the busy label and Cancel go once the latest request has answered
  void showResult();  // draws incoming_
  void showStatus(const SessionResult& result, double drawMs);
  void raiseRelevantView(const SessionResult& result);
  void askForSkippedCertificates();
  // The [CLS] maps over the bottom tabs and the prediction over the 3-D view while the source is a model.
  void raiseModelViews(bool model);
  void addCheckpointActions(QMenu* file);
  void buildModelMenu();
  void chooseAsapCompileSettings();
  void showCompileProgress(double fraction, const QString& stage);
  struct AsapCompileOutcome {
    std::string checkpoint, dir;
    bool ok = false;
    QString message;          // the compiled operator string, or why it stopped
    std::vector<int> layers;  // the compiled layers
    bool swapIn = false;
  };
  void finishCompile(const AsapCompileOutcome& outcome);
  // Another checkpoint (or no model) cannot run this compiled model: the trained operators come back.
  void stopUsingCompiledAsapOn(const SourceSpec& source);
  void restoreTrainedOperator();  // the operators and swap scope from before the swap-in, in the session
  QString swappedInMessage(int numLayers) const;
  void showError(quint64 requestId, const QString& message);
  void reportError(const QString& what, const QString& message);

  void chooseFileToOpen();
  void saveSessionFile(bool askForPath);
  void exportView(View* view);
  void exportPlanFile();

  Session session_;
  QString sessionPath_;
  EngineBridge* engine_ = nullptr;
  uint64_t latestRequest_ = 0;
  uint64_t cancelledThrough_ = 0;  // requests up to this id were cancelled: a late answer of theirs is dropped
  std::shared_ptr<const SessionResult> last_;
  std::shared_ptr<const SessionResult> incoming_;  // the newest result not drawn yet
  double lastDrawMs_ = 0;
  QTimer* submitTimer_ = nullptr;  // zero-interval single shots that coalesce submits and draws
  QTimer* drawTimer_ = nullptr;

  SourcePanel* sourcePanel_ = nullptr;
  OperatorPanel* operatorPanel_ = nullptr;
  QDockWidget* sourceDock_ = nullptr;
  QDockWidget* operatorDock_ = nullptr;
  std::vector<View*> views_;
  std::map<std::string, QDockWidget*> viewDocks_;  // docked views by name (the plan is central)
  std::string raisedFor_;  // "compare" or the primary family whose view was last raised
  bool modelViewsRaised_ = false;
  QMenu* viewMenu_ = nullptr;
  QMessageBox* errorBox_ = nullptr;
  QLabel* backend_ = nullptr;
  QLabel* resultDevice_ = nullptr;  // which device produced the result on screen
  QPushButton* runOnCpu_ = nullptr;  // offered in the error box when the GPU run failed
  QLabel* size_ = nullptr;
  QLabel* timing_ = nullptr;
  QLabel* marginal_ = nullptr;
  QLabel* busy_ = nullptr;
  QPushButton* cancel_ = nullptr;  // beside busy_ while a computation runs
  QProgressBar* progress_ = nullptr;  // beside busy_ while a computation reports progress

  // ASAP compilation (main_window_asap.cpp): the running one's progress/cancel object, its worker, the last
  // settings, and the compiled model the Model menu can swap in.
  std::shared_ptr<Feedback> compiling_;
  QThreadPool* compileWorker_ = nullptr;
  AsapCompileOptions compileOptions_;
  QAction* compileAction_ = nullptr;
  QAction* useCompiledAction_ = nullptr;
  std::string compiledFor_;  // the checkpoint it was compiled from
  std::string compiledOperator_;
  std::vector<int> compiledLayers_;
  std::vector<OperatorSpec> trainedOperators_;  // what the swap-in replaced
  SwapScope trainedScope_ = SwapScope::Layer;
  std::vector<int> trainedSwapLayers_;
};

}  // namespace tl
