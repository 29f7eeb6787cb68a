#pragma once
// Base of the views that only mean something for some results (the compare view needs two operators,
// the esp/lot/banded views their family's extras): a content page and a plain message page, so the dock
// says why it is empty ("the primary operator is Sinkhorn; this view shows ESP extras") instead of
// showing a blank plot.
#include <QString>

#include "view.h"

class QLabel;
class QStackedLayout;

namespace tl {

class FamilyView : public View {
  Q_OBJECT
 public:
  explicit FamilyView(QWidget* parent = nullptr);

  bool showingContent() const;
  QString message() const;  // the text on the message page (empty while showing content)
  std::string exportUnavailableReason() const override;

 protected:
  void setContent(QWidget* content);  // call once from the constructor
  void showContent();
  void showMessage(const QString& text);
  // "This view shows the <wanted> operator's extras; the primary operator is <actual>."
  static QString otherFamilyMessage(const std::string& wanted, const SessionResult* result);

 private:
  QStackedLayout* pages_ = nullptr;
  QLabel* message_ = nullptr;
};

// The primary run when its family is `family`, else nullptr.
const OperatorRun* primaryRunOf(const SessionResult* result, const std::string& family);
// Extra `name` of `run`, or an empty matrix.
MatD extra(const OperatorRun& run, const std::string& name);

}  // namespace tl
