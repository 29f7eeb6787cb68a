#pragma once
// The 3-D view for point-cloud sources: the transport plan drawn as lines between query and key points
// (CloudScene), shown live in a VtkGlWidget (rotate: left drag, zoom: wheel or right drag, pan: middle
// drag). Under the offscreen Qt platform, where a QOpenGLWidget cannot be shown, the same scene is shown
// as an image rendered offscreen. For other sources it says plainly why there is nothing to draw.
#include <memory>

#include "widgets/views/view.h"
#include "widgets/vtk/cloud_scene.h"

class QCheckBox;
class QLabel;
class QSpinBox;
class QStackedWidget;

namespace tl {

class VtkGlWidget;
class VtkImageRenderer;

class Cloud3DView : public View {
  Q_OBJECT
 public:
  static constexpr int kDefaultMaxLines = 2000;

  explicit Cloud3DView(QWidget* parent = nullptr);
  ~Cloud3DView() override;

  std::string viewName() const override { return "cloud3d"; }
  QString title() const override { return tr("3-D point clouds"); }
  void setResult(std::shared_ptr<const SessionResult> result) override;
  nlohmann::json saveState() const override;
  void restoreState(const nlohmann::json& state) override;
  // vtkGL2PSExporter's SVG has no 3-D content in Debian's VTK, so 3-D is offered as PNG and PDF only.
  std::vector<std::string> exportFormats() const override { return {"png", "pdf"}; }
  void exportFigure(const std::string& path, const std::string& format,
                    const ExportSettings& settings) const override;
  std::string exportUnavailableReason() const override;

  bool showingScene() const;
  const CloudScene& scene() const { return *scene_; }
  int maxLines() const;
  void setMaxLines(int lines);

 protected:
  void resizeEvent(QResizeEvent* event) override;

 private:
  void redrawScene();
  // The operator's own structure, when it lives in the scene's 3-D space and the user asked for it.
  CloudOverlay overlayFor(const OperatorRun& run) const;
  void updateStructureToggle(const OperatorRun* run);
  void refreshImage();  // offscreen-platform display only
  QString whyNothingToDraw() const;

  std::shared_ptr<const SessionResult> result_;
  const AttentionInput<double>* sceneInput_ = nullptr;  // camera resets when the input changes
  nlohmann::json pendingCamera_;                        // restored before the first scene exists
  std::unique_ptr<CloudScene> scene_;
  std::unique_ptr<VtkImageRenderer> imageRenderer_;
  QSpinBox* maxLines_ = nullptr;
  QCheckBox* structure_ = nullptr;  // LOT: flows through pivots; ESP: slice directions
  QStackedWidget* pages_ = nullptr;
  QLabel* message_ = nullptr;
  VtkGlWidget* gl_ = nullptr;
  QLabel* image_ = nullptr;
};

}  // namespace tl
