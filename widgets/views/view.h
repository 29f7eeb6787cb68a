#pragma once
// What every view offers the main window and renderFigures: draw a SessionResult, save and restore its
// own block of Session::viewState, and export itself. The GUI's export menu and `tlens render` both call
// exportFigure, so a figure on screen and a headless one come from the same code.
#include <QWidget>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "session/engine.h"

namespace tl {

class View : public QWidget {
  Q_OBJECT
 public:
  using QWidget::QWidget;

  virtual std::string viewName() const = 0;  // key in Session::views and viewState: "plan"
  virtual QString title() const = 0;         // dock title: "Transport plan"

  // Draws `result` now (`tlens render`, tests, views inside other widgets).
  virtual void setResult(std::shared_ptr<const SessionResult> result) = 0;
  // What the window calls: draws now when the view is on screen; a view that is not (a closed dock, a tab
  // behind another, a window not shown yet) keeps the result and draws it once it is, so hidden views cost
  // nothing while sliders move.
  void present(std::shared_ptr<const SessionResult> result);
  // Draws the result kept while off screen, if any (an export of a hidden view).
  void drawPending();
  // Shown and not parked behind another tab: Qt moves the widgets of a dock's hidden tabs outside the window
  // instead of hiding them, so isVisible() alone says nothing about tabs.
  bool onScreen() const;
  // Draws the kept result once the layout has placed the view (a tab raised, a dock opened, the window shown).
  void drawPendingWhenOnScreen();
  // Views that compute on a worker thread after setResult (the ASAP view's fit) finish and draw before
  // returning, so `tlens render` exports what the GUI would show.
  virtual void finishPending() {}
  virtual nlohmann::json saveState() const = 0;
  virtual void restoreState(const nlohmann::json& state) = 0;

  virtual std::vector<std::string> exportFormats() const = 0;  // "png", "svg", "pdf"
  // Throws tl::Error (FileError for write failures, InvalidArgument for formats the view lacks).
  virtual void exportFigure(const std::string& path, const std::string& format,
                            const ExportSettings& settings) const = 0;
  // Empty when the view can export now; otherwise why not ("source is not a point cloud").
  virtual std::string exportUnavailableReason() const { return {}; }

 signals:
  // The view has drawn the result of this request on screen.
  void redrawn(quint64 requestId);

 protected:
  void showEvent(QShowEvent* event) override;

 private:
  std::shared_ptr<const SessionResult> pending_;  // the newest result that arrived while hidden
};

// The primary operator's run, or nullptr when the result has none.
const OperatorRun* primaryRun(const SessionResult* result);
// Reads `key` from a view-state block, keeping `fallback` when absent or of another type.
template <class T>
T stateValue(const nlohmann::json& state, const char* key, T fallback) {
  if (!state.is_object() || !state.contains(key)) return fallback;
  try {
    return state.at(key).get<T>();
  } catch (const nlohmann::json::exception&) {
    return fallback;
  }
}

}  // namespace tl
