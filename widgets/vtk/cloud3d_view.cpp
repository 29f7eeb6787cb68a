#include "widgets/vtk/cloud3d_view.h"

#include <QBuffer>
#include <QCheckBox>
#include <QGuiApplication>
#include <QHBoxLayout>
#include <QLabel>
#include <QPageLayout>
#include <QPainter>
#include <QPdfWriter>
#include <QSpinBox>
#include <QStackedWidget>
#include <QToolButton>
#include <QVBoxLayout>
#include <vtkCamera.h>
#include <vtkGenericOpenGLRenderWindow.h>
#include <vtkRenderer.h>

#include "common/errors.h"
#include "io/atomic_file.h"
#include "ops/esp/esp.h"
#include "widgets/shell/x_display.h"
#include "widgets/vtk/vtk_gl_widget.h"
#include "widgets/vtk/vtk_image_renderer.h"

namespace tl {
namespace {

bool offscreenPlatform() { return QGuiApplication::platformName() == "offscreen"; }

nlohmann::json cameraState(vtkCamera* camera) {
  auto triple = [](const double* v) { return nlohmann::json::array({v[0], v[1], v[2]}); };
  return {{"position", triple(camera->GetPosition())},
          {"focalPoint", triple(camera->GetFocalPoint())},
          {"viewUp", triple(camera->GetViewUp())},
          {"viewAngle", camera->GetViewAngle()}};
}

bool applyCameraState(vtkCamera* camera, const nlohmann::json& state) {
  try {
    const auto p = state.at("position").get<std::vector<double>>();
    const auto f = state.at("focalPoint").get<std::vector<double>>();
    const auto u = state.at("viewUp").get<std::vector<double>>();
    if (p.size() != 3 || f.size() != 3 || u.size() != 3) return false;
    camera->SetPosition(p.data());
    camera->SetFocalPoint(f.data());
    camera->SetViewUp(u.data());
    camera->SetViewAngle(state.at("viewAngle").get<double>());
    return true;
  } catch (const nlohmann::json::exception&) {
    return false;
  }
}

QByteArray encodePng(const QImage& image) {
  QByteArray bytes;
  QBuffer buffer(&bytes);
  buffer.open(QIODevice::WriteOnly);
  if (image.isNull() || !image.save(&buffer, "PNG")) throw Error("could not encode the 3-D view as PNG");
  return bytes;
}

// The 3-D picture is raster either way (GL2PS would rasterise the 3-D props too); the PDF page has the
// figure's size in points so it drops into a paper like the 2-D figures.
QByteArray encodePdf(const QImage& image, int width, int height) {
  QByteArray bytes;
  QBuffer buffer(&bytes);
  buffer.open(QIODevice::WriteOnly);
  QPdfWriter pdf(&buffer);
  pdf.setCreator("TransportLens");
  pdf.setResolution(72);
  pdf.setPageLayout(QPageLayout(QPageSize(QSizeF(width, height), QPageSize::Point), QPageLayout::Portrait,
                                QMarginsF(0, 0, 0, 0)));
  QPainter painter(&pdf);
  painter.setRenderHint(QPainter::SmoothPixmapTransform);
  painter.drawImage(QRectF(0, 0, width, height), image);
  painter.end();
  return bytes;
}

}  // namespace

Cloud3DView::Cloud3DView(QWidget* parent) : View(parent), scene_(std::make_unique<CloudScene>()) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(2, 2, 2, 2);
  auto* bar = new QHBoxLayout;
  maxLines_ = new QSpinBox(this);
  maxLines_->setObjectName("maxLines");
  maxLines_->setRange(0, 200000);
  maxLines_->setSingleStep(500);
  maxLines_->setValue(kDefaultMaxLines);
  maxLines_->setToolTip(tr("Draw only this many plan entries, the largest first, to keep the view interactive"));
  auto* reset = new QToolButton(this);
  reset->setText(tr("reset camera"));
  bar->addWidget(new QLabel(tr("lines (largest A_ij)"), this));
  bar->addWidget(maxLines_);
  structure_ = new QCheckBox(this);
  structure_->setObjectName("operatorStructure");
  structure_->setChecked(true);
  structure_->setVisible(false);
  bar->addWidget(structure_);
  bar->addStretch(1);
  bar->addWidget(reset);
  layout->addLayout(bar);

  pages_ = new QStackedWidget(this);
  message_ = new QLabel(pages_);
  message_->setWordWrap(true);
  message_->setAlignment(Qt::AlignCenter);
  message_->setMargin(24);
  message_->setObjectName("cloud3dMessage");
  pages_->addWidget(message_);
  if (offscreenPlatform()) {
    image_ = new QLabel(pages_);
    image_->setAlignment(Qt::AlignCenter);
    image_->setMinimumSize(200, 200);
    pages_->addWidget(image_);
    if (haveXDisplay()) imageRenderer_ = std::make_unique<VtkImageRenderer>();
  } else {
    gl_ = new VtkGlWidget(pages_);
    gl_->setMinimumSize(200, 200);
    gl_->renderWindow()->AddRenderer(scene_->renderer());
    pages_->addWidget(gl_);
  }
  layout->addWidget(pages_, 1);
  message_->setText(whyNothingToDraw());

  connect(maxLines_, &QSpinBox::valueChanged, this, [this] { redrawScene(); });
  connect(structure_, &QCheckBox::toggled, this, [this] { redrawScene(); });
  connect(reset, &QToolButton::clicked, this, [this] {
    scene_->resetCamera();
    if (gl_) gl_->update();
    refreshImage();
  });
}

Cloud3DView::~Cloud3DView() = default;

QString Cloud3DView::whyNothingToDraw() const {
  if (offscreenPlatform() && !haveXDisplay())
    return tr("The 3-D view renders through X, and no X display is available.\n"
              "Run under an X server (e.g. xvfb-run) to see it.");
  if (!result_)
    return tr("Waiting for the first result…");
  if (!result_->session.source.isPointCloud())
    return tr("The 3-D view draws point-cloud sources: queries and keys as points in space, joined by "
              "the plan's largest entries.\n\nThe current source (%1) holds %2-dimensional features, not "
              "3-D points. Pick the point-cloud generator in the Source panel to see it.")
        .arg(QString::fromStdString(result_->session.source.toString()))
        .arg(result_->input ? result_->input->headDim() : 0);
  return {};
}

std::string Cloud3DView::exportUnavailableReason() const {
  if (!haveXDisplay()) return "needs an X display (run under xvfb-run)";
  if (!result_) return "no result yet";
  if (!result_->session.source.isPointCloud()) return "the source is not a point cloud";
  if (!primaryRun(result_.get()) || primaryRun(result_.get())->result.plan.size() == 0)
    return "the operator did not form a dense plan";
  return {};
}

void Cloud3DView::setResult(std::shared_ptr<const SessionResult> result) {
  result_ = std::move(result);
  redrawScene();
  if (result_) emit redrawn(result_->requestId);
}

// LOT's pivots and ESP's slice directions live in the token space: drawn when that space is the
// scene's (d = 3).
CloudOverlay Cloud3DView::overlayFor(const OperatorRun& run) const {
  CloudOverlay overlay;
  if (!structure_->isChecked()) return overlay;
  auto extra = [&](const char* name) {
    auto it = run.result.extras.find(name);
    return it != run.result.extras.end() ? it->second : MatD();
  };
  if (run.spec.family == "lot" && extra("lot_pivots").cols() == 3) {
    overlay.pivots = extra("lot_pivots");
    overlay.toPivots = extra("lot_P1");
    overlay.fromPivots = extra("lot_P2");
  } else if (run.spec.family == "esp" && extra(EspExtras::directions).cols() == 3) {
    overlay.directions = extra(EspExtras::directions);
    overlay.directionWeights = extra(EspExtras::weights).col(0);
  }
  return overlay;
}

void Cloud3DView::updateStructureToggle(const OperatorRun* run) {
  const std::string family = run ? run->spec.family : "";
  structure_->setVisible(family == "lot" || family == "esp");
  structure_->setText(family == "lot" ? tr("flows through pivots") : tr("slice directions"));
  structure_->setToolTip(family == "lot"
                             ? tr("Draw LOT's pivots and the flows query → pivot → key (the factors P1, P2) "
                                  "instead of the composed plan's entries")
                             : tr("Draw ESP's slice directions θ_l as axes through the clouds; darker = larger "
                                  "weight w_l"));
}

void Cloud3DView::redrawScene() {
  const QString why = whyNothingToDraw();
  const OperatorRun* run = primaryRun(result_.get());
  updateStructureToggle(run);
  if (!why.isEmpty() || !run || !result_->input) {
    message_->setText(why);
    pages_->setCurrentWidget(message_);
    return;
  }
  scene_->update(*result_->input, run->result.plan, maxLines_->value(), overlayFor(*run));
  if (sceneInput_ != result_->input.get()) {
    // A new input (not only new operator parameters): frame it, unless a saved camera is waiting.
    if (pendingCamera_.is_null() || !applyCameraState(scene_->renderer()->GetActiveCamera(), pendingCamera_))
      scene_->resetCamera();
    pendingCamera_ = nullptr;
    sceneInput_ = result_->input.get();
  }
  scene_->renderer()->ResetCameraClippingRange();
  pages_->setCurrentIndex(1);
  if (gl_) gl_->update();
  refreshImage();
}

void Cloud3DView::refreshImage() {
  if (!image_ || !imageRenderer_ || !isVisible() || pages_->currentWidget() != image_) return;
  const double ratio = devicePixelRatioF();
  QImage picture = imageRenderer_->render(scene_->renderer(), int(image_->width() * ratio),
                                          int(image_->height() * ratio));
  picture.setDevicePixelRatio(ratio);
  image_->setPixmap(QPixmap::fromImage(picture));
}

void Cloud3DView::resizeEvent(QResizeEvent* event) {
  View::resizeEvent(event);
  refreshImage();
}

bool Cloud3DView::showingScene() const { return pages_->currentIndex() == 1; }
int Cloud3DView::maxLines() const { return maxLines_->value(); }
void Cloud3DView::setMaxLines(int lines) { maxLines_->setValue(lines); }

nlohmann::json Cloud3DView::saveState() const {
  nlohmann::json state = {{"maxLines", maxLines_->value()}, {"operatorStructure", structure_->isChecked()}};
  if (sceneInput_) state["camera"] = cameraState(scene_->renderer()->GetActiveCamera());
  else if (!pendingCamera_.is_null()) state["camera"] = pendingCamera_;
  return state;
}

void Cloud3DView::restoreState(const nlohmann::json& state) {
  setMaxLines(stateValue(state, "maxLines", int(kDefaultMaxLines)));
  structure_->setChecked(stateValue(state, "operatorStructure", true));
  pendingCamera_ = stateValue(state, "camera", nlohmann::json());
  // A scene already on screen takes the camera now; otherwise the next new input does.
  if (sceneInput_ && !pendingCamera_.is_null() &&
      applyCameraState(scene_->renderer()->GetActiveCamera(), pendingCamera_)) {
    pendingCamera_ = nullptr;
    scene_->renderer()->ResetCameraClippingRange();
    if (gl_) gl_->update();
    refreshImage();
  }
}

// Exports draw a fresh scene of the same data with the same camera in an offscreen window, at the
// export size; the GUI menu and `tlens render` both come through here.
void Cloud3DView::exportFigure(const std::string& path, const std::string& format,
                               const ExportSettings& settings) const {
  if (format != "png" && format != "pdf")
    throw InvalidArgument("the 3-D view exports png or pdf, not '" + format + "'");
  if (const std::string why = exportUnavailableReason(); !why.empty())
    throw Error("cannot export the 3-D view: " + why);
  const double scale = std::max(1.0, settings.scale);
  CloudScene scene;
  const OperatorRun& run = *primaryRun(result_.get());
  scene.update(*result_->input, run.result.plan, maxLines_->value(), overlayFor(run));
  scene.setPixelScale(scale);
  if (sceneInput_) scene.copyCamera(scene_->renderer()->GetActiveCamera());
  else scene.resetCamera();
  VtkImageRenderer renderer;
  const QImage image = renderer.render(scene.renderer(), int(settings.width * scale), int(settings.height * scale));
  const QByteArray bytes = format == "png" ? encodePng(image) : encodePdf(image, settings.width, settings.height);
  writeFileAtomically(path, std::string(bytes.constData(), size_t(bytes.size())));
}

}  // namespace tl
