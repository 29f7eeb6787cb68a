#pragma once
// What the model predicts for the image: the class probabilities (softmax of the logits) as horizontal bars,
// the model's own run and, when the session swapped the primary operator in, the swapped run beside it in a
// second colour; the true class is marked when the image comes from a labelled dataset whose class names the
// model uses, and the title names both predictions. When the source is not a model the view says so.
// A model with more classes than the view's "top k" (ImageNet's 1000) shows its k most probable classes,
// most probable first (ranked by the larger of the two runs' probabilities), and the true class below them
// with its rank when it is not among them; with k or fewer classes every class is shown in class order.
#include "widgets/views/family_view.h"

class QCPAxisRect;
class QCPBars;
class QCPItemRect;
class QCPItemText;
class QCPLegend;
class QLabel;
class QSpinBox;

namespace tl {

class PredictionView : public FamilyView {
  Q_OBJECT
 public:
  explicit PredictionView(QWidget* parent = nullptr);

  std::string viewName() const override { return "prediction"; }
  QString title() const override { return tr("Prediction"); }
  void setResult(std::shared_ptr<const SessionResult> result) override;
  nlohmann::json saveState() const override;  // {"top_k": k}
  void restoreState(const nlohmann::json& state) override;

  static constexpr int kDefaultTopK = 10;

  // What is drawn (tests compare it with a softmax of the traces' logits).
  int classCount() const;                    // the model's classes, shown or not
  double probability(int cls) const;         // the model's own run
  double swappedProbability(int cls) const;  // NaN when nothing is swapped in
  bool showingSwapped() const;
  int markedTrueClass() const;  // -1 when no class is marked
  QString heading() const;
  QString classLabel(int cls) const;       // the tick label beside the class's bars; empty when not shown
  std::vector<int> shownClasses() const;   // the classes with bars, top row first
  int topK() const;
  void setTopK(int k);

 private:
  void redraw();
  void showProbabilityRange();
  void drawBars(QCPBars* bars, const VecD& probabilities, double offset, double width);
  void labelRows(int trueClass);
  void showLabelsThatFit();

  QCPAxisRect* rect_ = nullptr;
  QCPBars* original_ = nullptr;
  QCPBars* swapped_ = nullptr;
  QCPItemRect* trueBand_ = nullptr;
  QCPLegend* legend_ = nullptr;
  std::vector<QCPItemText*> valueLabels_;
  QSpinBox* topK_ = nullptr;
  QLabel* ofClasses_ = nullptr;  // "of 1000 classes" beside the spin box
  VecD ownProbabilities_, swappedProbabilities_;  // per class; the swapped ones empty when nothing is swapped in
  std::vector<int> rows_;        // the class drawn on each row, top first
  int trueClass_ = -1;
};

}  // namespace tl
