#pragma once
// The layout of the [CLS] figure: a large map, the small maps in a grid beside it (as tall together as the
// large one) and the colour scale, sized as one group so the images get all the height or all the width,
// whichever runs out first, and the group centred. A plain grid would leave the large map and its small
// maps far apart whenever the figure is wider than the images need (the wide bottom dock, a 4:3 export).
#include <qcustomplot.h>

#include <vector>

namespace tl {

class ClsMapsLayout : public QCPLayout {
 public:
  ClsMapsLayout() = default;
  ~ClsMapsLayout() override;

  // The layout owns what it is given (QCPLayout deletes removed elements).
  void setLarge(QCPLayoutElement* large);
  void setScale(QCPLayoutElement* scale);
  void addPanel(QCPLayoutElement* panel);
  void removePanels();
  // Grid shape of the small maps: as square as their count allows, wider than tall.
  int columns() const;
  int rows() const;

  int elementCount() const override;
  QCPLayoutElement* elementAt(int index) const override;
  QCPLayoutElement* takeAt(int index) override;
  bool take(QCPLayoutElement* element) override;

 protected:
  void updateLayout() override;

 private:
  std::vector<QCPLayoutElement*> present() const;

  QCPLayoutElement* large_ = nullptr;
  QCPLayoutElement* scale_ = nullptr;
  std::vector<QCPLayoutElement*> panels_;
};

}  // namespace tl
