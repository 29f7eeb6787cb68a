#pragma once
// [CLS] maps of a model session: for the source's layer, one small map per head and a large one of the
// source's head, each drawn over the image the model saw (grey underneath, the map as a colour overlay with
// adjustable opacity, nearest by default: one block per patch, as the tokens are; bilinear on request).
// Kinds: what [CLS] reads from each patch (query row), what each patch reads from [CLS] (key column), or
// attention rollout through the layers (then one small map per depth and the large one through the source's
// layer). The model's own attention, the run with the primary operator swapped in, or their difference on a
// diverging scale. When the source is not a model the view says so.
#include "session/cls_map_panels.h"
#include "widgets/plot/image_overlay_map.h"
#include "widgets/views/family_view.h"

class QCheckBox;
class QComboBox;
class QSlider;

namespace tl {

class ClsMapsLayout;

class ClsMapView : public FamilyView {
  Q_OBJECT
 public:
  explicit ClsMapView(QWidget* parent = nullptr);

  std::string viewName() const override { return "cls"; }
  QString title() const override { return tr("[CLS] maps"); }
  void setResult(std::shared_ptr<const SessionResult> result) override;
  nlohmann::json saveState() const override;
  void restoreState(const nlohmann::json& state) override;

  ClsMapOptions options() const;
  void setOptions(const ClsMapOptions& options);
  // What is drawn (tests compare it with core/analysis/cls_maps.h on the result's traces).
  int panelCount() const { return int(panels_.size()); }
  MatD panelValues(int panel) const { return panels_.at(size_t(panel)).values(); }
  MatD largeValues() const { return large_.values(); }
  MatD imageValues() const;  // the grey image under the large map
  ClsTrace drawnTrace() const { return drawn_; }
  QCPRange colourRange() const;
  QString heading() const;

 private:
  QWidget* makeControls(QWidget* parent);
  void redraw();
  void setPanelCount(int count);
  void alignScaleWithLargeMap();
  void drawHeading(const ClsMaps& maps);
  void offerSwappedTraces(bool available);

  QComboBox* kind_ = nullptr;
  QComboBox* fusion_ = nullptr;
  QComboBox* trace_ = nullptr;
  QComboBox* colours_ = nullptr;
  QSlider* opacity_ = nullptr;
  QCheckBox* smooth_ = nullptr;
  QCPColorScale* scale_ = nullptr;
  ClsMapsLayout* maps_ = nullptr;
  ImageOverlayMap large_;
  std::vector<ImageOverlayMap> panels_;
  ClsTrace drawn_ = ClsTrace::Original;
};

}  // namespace tl
