#pragma once
// What the model predicts for the image: the class probabilities (softmax of the logits) as horizontal bars,
// the model's own run and, when the session swapped the primary operator in, the swapped run beside it in a
// second colour; the true class is marked when the image comes from a labelled dataset whose class names the
// model uses, and the title names both predictions. When the source is not a model the view says so.
#include "widgets/views/family_view.h"

class QCPAxisRect;
class QCPBars;
class QCPItemRect;
class QCPItemText;
class QCPLegend;

namespace tl {

class PredictionView : public FamilyView {
  Q_OBJECT
 public:
  explicit PredictionView(QWidget* parent = nullptr);

  std::string viewName() const override { return "prediction"; }
  QString title() const override { return tr("Prediction"); }
  void setResult(std::shared_ptr<const SessionResult> result) override;

  // What is drawn (tests compare it with a softmax of the traces' logits).
  int classCount() const;
  double probability(int cls) const;         // the model's own run
  double swappedProbability(int cls) const;  // NaN when nothing is swapped in
  bool showingSwapped() const;
  int markedTrueClass() const;  // -1 when no class is marked
  QString heading() const;
  QString classLabel(int cls) const;  // the tick label beside the bars

 private:
  void drawBars(QCPBars* bars, const VecD& probabilities, double offset, double width);
  void markTrueClass(int cls);
  void showLabelsThatFit();

  QCPAxisRect* rect_ = nullptr;
  QCPBars* original_ = nullptr;
  QCPBars* swapped_ = nullptr;
  QCPItemRect* trueBand_ = nullptr;
  QCPLegend* legend_ = nullptr;
  std::vector<QCPItemText*> valueLabels_;
  int trueClass_ = -1;
};

}  // namespace tl
