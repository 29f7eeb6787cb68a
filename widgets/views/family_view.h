#pragma once
// Base of the views that only mean something for some results (the compare view needs two operators,
// the esp/lot/banded views their family's extras): a content page and a plain message page, so the dock
// says why it is empty ("the primary operator is Sinkhorn; this view shows ESP extras") instead of
// showing a blank plot. Its content is one QCustomPlot under a heading (makePlot), which is what exports.
#include <QFont>
#include <QSize>
#include <QString>

#include "widgets/views/view.h"

class QCPLayoutGrid;
class QCPTextElement;
class QCustomPlot;
class QLabel;
class QStackedLayout;
class QWidget;

namespace tl {

class FamilyView : public View {
  Q_OBJECT
 public:
  explicit FamilyView(QWidget* parent = nullptr);

  bool showingContent() const;
  QString message() const;  // the text on the message page (empty while showing content)
  QCustomPlot* plot() const { return plot_; }

  // Stateless unless a view says otherwise; the figure is the plot.
  nlohmann::json saveState() const override { return nlohmann::json::object(); }
  void restoreState(const nlohmann::json&) override {}
  std::vector<std::string> exportFormats() const override { return {"png", "svg", "pdf"}; }
  void exportFigure(const std::string& path, const std::string& format,
                    const ExportSettings& settings) const override;
  std::string exportUnavailableReason() const override;

 protected:
  void setContent(QWidget* content);  // call once from the constructor
  // Creates plot_ in `host` with heading_ on top and returns the layout grid below it for the panels.
  QCPLayoutGrid* makePlot(QWidget* host, const QString& heading, QSize minimumSize, const QFont& headingFont);
  void showContent();
  void showMessage(const QString& text);
  // "This view shows the <wanted> operator's extras; the primary operator is <actual>."
  static QString otherFamilyMessage(const std::string& wanted, const SessionResult* result);

  std::shared_ptr<const SessionResult> result_;
  QCustomPlot* plot_ = nullptr;
  QCPTextElement* heading_ = nullptr;

 private:
  QStackedLayout* pages_ = nullptr;
  QLabel* message_ = nullptr;
};

// The primary run when its family is `family`, else nullptr.
const OperatorRun* primaryRunOf(const SessionResult* result, const std::string& family);
// Extra `name` of `run`, or an empty matrix.
MatD extra(const OperatorRun& run, const std::string& name);

}  // namespace tl
