#include "widgets/views/family_view.h"

#include <QFrame>
#include <QLabel>
#include <QScrollArea>
#include <QStackedLayout>

#include "ops/registry.h"
#include "widgets/plot/plot_export.h"
#include "widgets/plot/plot_style.h"

namespace tl {

FamilyView::FamilyView(QWidget* parent) : View(parent) {
  pages_ = new QStackedLayout(this);
  message_ = new QLabel(this);
  message_->setObjectName("viewMessage");
  message_->setAlignment(Qt::AlignCenter);
  message_->setWordWrap(true);
  message_->setMargin(24);
  message_->setStyleSheet("QLabel { color: #555; font-size: 11pt; }");
  pages_->addWidget(message_);
  showMessage(tr("No result yet."));
}

void FamilyView::setContent(QWidget* content) {
  // A figure taller than its dock scrolls instead of growing the window: the bottom docks are tabs of one
  // height, so the tallest figure's minimum became the window's (1242 px with the ASAP and Certificates views,
  // past the bottom of a 1000 px screen).
  auto* scroll = new QScrollArea(this);
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  scroll->setWidget(content);
  pages_->addWidget(scroll);
}

QCPLayoutGrid* FamilyView::makePlot(QWidget* host, const QString& heading, QSize minimumSize,
                                    const QFont& headingFont) {
  plot_ = new QCustomPlot(host);
  plot_->setMinimumSize(minimumSize);
  plot_->plotLayout()->clear();
  heading_ = new QCPTextElement(plot_, heading, headingFont);
  plot_->plotLayout()->addElement(0, 0, heading_);
  auto* grid = new QCPLayoutGrid;
  plot_->plotLayout()->addElement(1, 0, grid);
  return grid;
}

void FamilyView::exportFigure(const std::string& path, const std::string& format,
                              const ExportSettings& settings) const {
  exportPlot(*plot_, path, format, settings);
}

void FamilyView::showContent() {
  message_->clear();
  pages_->setCurrentIndex(1);
}

void FamilyView::showMessage(const QString& text) {
  message_->setText(text);
  pages_->setCurrentIndex(0);
}

bool FamilyView::showingContent() const { return pages_->currentIndex() == 1; }
QString FamilyView::message() const { return showingContent() ? QString() : message_->text(); }

std::string FamilyView::exportUnavailableReason() const {
  return showingContent() ? std::string() : message_->text().toStdString();
}

QString FamilyView::otherFamilyMessage(const std::string& wanted, const SessionResult* result) {
  const OperatorRegistry& registry = OperatorRegistry::builtin();
  const QString title = QString::fromStdString(registry.get(wanted).title);
  const OperatorRun* run = primaryRun(result);
  if (!run) return tr("No result yet: this view shows the %1 operator's internals.").arg(title);
  return tr("This view shows the %1 operator's internals.\nThe primary operator is %2: pick %1 in the "
            "Operator panel to see them.")
      .arg(title, QString::fromStdString(registry.get(run->spec.family).title));
}

const OperatorRun* primaryRunOf(const SessionResult* result, const std::string& family) {
  const OperatorRun* run = primaryRun(result);
  return run && run->spec.family == family ? run : nullptr;
}

MatD extra(const OperatorRun& run, const std::string& name) {
  auto it = run.result.extras.find(name);
  return it == run.result.extras.end() ? MatD() : it->second;
}

}  // namespace tl
