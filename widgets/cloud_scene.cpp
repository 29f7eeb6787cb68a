#include "cloud_scene.h"

#include <vtkActor.h>
#include <vtkCamera.h>
#include <vtkCellArray.h>
#include <vtkCellData.h>
#include <vtkPoints.h>
#include <vtkPolyData.h>
#include <vtkPolyDataMapper.h>
#include <vtkProperty.h>
#include <vtkRenderer.h>
#include <vtkTextActor.h>
#include <vtkTextProperty.h>
#include <vtkUnsignedCharArray.h>

#include <QFileInfo>
#include <algorithm>
#include <cmath>
#include <numeric>

#include "plot_style.h"

namespace tl {
namespace {

constexpr double kPointSize = 7;
constexpr double kLineWidths[CloudScene::kLineWidthClasses] = {1.0, 1.8, 2.8, 4.0};
const char* const kLegendFont = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";

vtkSmartPointer<vtkPolyData> pointCloud(const MatD& X) {
  auto points = vtkSmartPointer<vtkPoints>::New();
  auto vertices = vtkSmartPointer<vtkCellArray>::New();
  for (int r = 0; r < X.rows(); ++r) {
    double p[3] = {0, 0, 0};
    for (int c = 0; c < std::min<int>(3, int(X.cols())); ++c) p[c] = X(r, c);
    const vtkIdType id = points->InsertNextPoint(p);
    vertices->InsertNextCell(1, &id);
  }
  auto poly = vtkSmartPointer<vtkPolyData>::New();
  poly->SetPoints(points);
  poly->SetVerts(vertices);
  return poly;
}

vtkSmartPointer<vtkActor> makeActor(vtkPolyData* data) {
  auto mapper = vtkSmartPointer<vtkPolyDataMapper>::New();
  mapper->SetInputData(data);
  auto actor = vtkSmartPointer<vtkActor>::New();
  actor->SetMapper(mapper);
  return actor;
}

void setColor(vtkActor* actor, const QColor& c) {
  actor->GetProperty()->SetColor(c.redF(), c.greenF(), c.blueF());
}

vtkSmartPointer<vtkTextActor> makeLabel(const QColor& color, int row) {
  auto label = vtkSmartPointer<vtkTextActor>::New();
  vtkTextProperty* text = label->GetTextProperty();
  if (QFileInfo::exists(kLegendFont)) {
    text->SetFontFamily(VTK_FONT_FILE);
    text->SetFontFile(kLegendFont);
  }
  text->SetFontSize(15);
  text->SetColor(color.redF(), color.greenF(), color.blueF());
  label->SetPosition(12, 10 + 22 * row);
  return label;
}

// Line colour runs from a light grey-blue (little mass) to a deep wine red (the largest entry).
void massColor(double t, unsigned char rgba[4]) {
  const double light[3] = {170, 175, 195}, dark[3] = {125, 20, 60};
  for (int c = 0; c < 3; ++c) rgba[c] = static_cast<unsigned char>(light[c] + t * (dark[c] - light[c]));
  rgba[3] = static_cast<unsigned char>(35 + 220 * std::pow(t, 0.75));
}

}  // namespace

CloudScene::CloudScene() : renderer_(vtkSmartPointer<vtkRenderer>::New()) {
  renderer_->GradientBackgroundOn();
  renderer_->SetBackground(0.86, 0.88, 0.92);
  renderer_->SetBackground2(1.0, 1.0, 1.0);
  auto empty = vtkSmartPointer<vtkPolyData>::New();
  queryPoints_ = makeActor(empty);
  keyPoints_ = makeActor(empty);
  setColor(queryPoints_, rowColor());
  setColor(keyPoints_, colColor());
  for (vtkActor* a : {queryPoints_.Get(), keyPoints_.Get()}) {
    a->GetProperty()->SetRenderPointsAsSpheres(true);
    renderer_->AddActor(a);
  }
  for (auto& actor : lines_) {
    actor = makeActor(empty);
    renderer_->AddActor(actor);
  }
  legend_[0] = makeLabel(QColor(60, 60, 60), 0);
  legend_[1] = makeLabel(colColor().darker(115), 1);
  legend_[2] = makeLabel(rowColor().darker(115), 2);
  for (auto& label : legend_) renderer_->AddActor2D(label);
  setPixelScale(1);
}

void CloudScene::setPixelScale(double scale) {
  pixelScale_ = scale;
  for (vtkActor* a : {queryPoints_.Get(), keyPoints_.Get()}) a->GetProperty()->SetPointSize(kPointSize * scale);
  for (int c = 0; c < kLineWidthClasses; ++c) lines_[c]->GetProperty()->SetLineWidth(kLineWidths[c] * scale);
  for (int row = 0; row < 3; ++row) {
    legend_[row]->GetTextProperty()->SetFontSize(int(15 * scale));
    legend_[row]->SetPosition(12 * scale, (10 + 22 * row) * scale);
  }
}

void CloudScene::update(const AttentionInput<double>& input, const MatD& plan, int maxLines) {
  auto queries = pointCloud(input.Q);
  auto keys = pointCloud(input.K);
  queryPoints_->GetMapper()->SetInputDataObject(queries);
  keyPoints_->GetMapper()->SetInputDataObject(keys);
  counts_ = {};
  counts_.queries = int(input.Q.rows());
  counts_.keys = int(input.K.rows());

  // The largest entries first; ties keep index order so the picture is reproducible.
  std::vector<long long> order;
  order.reserve(size_t(plan.size()));
  for (long long e = 0; e < plan.size(); ++e)
    if (plan.data()[e] > 0) order.push_back(e);
  counts_.entries = (long long)order.size();
  const size_t kept = std::min(order.size(), size_t(std::max(maxLines, 0)));
  auto larger = [&](long long a, long long b) {
    return plan.data()[a] > plan.data()[b] || (plan.data()[a] == plan.data()[b] && a < b);
  };
  std::partial_sort(order.begin(), order.begin() + kept, order.end(), larger);
  order.resize(kept);
  counts_.lines = int(kept);
  const double total = plan.sum();
  const double top = kept ? plan.data()[order.front()] : 1;

  // Lines share one point set: queries first, then keys.
  auto points = vtkSmartPointer<vtkPoints>::New();
  points->DeepCopy(queries->GetPoints());
  points->InsertPoints(counts_.queries, counts_.keys, 0, keys->GetPoints());
  vtkSmartPointer<vtkCellArray> cells[kLineWidthClasses];
  vtkSmartPointer<vtkUnsignedCharArray> colors[kLineWidthClasses];
  for (int c = 0; c < kLineWidthClasses; ++c) {
    cells[c] = vtkSmartPointer<vtkCellArray>::New();
    colors[c] = vtkSmartPointer<vtkUnsignedCharArray>::New();
    colors[c]->SetNumberOfComponents(4);
    colors[c]->SetName("mass");
  }
  double shown = 0;
  for (long long e : order) {
    const double mass = plan.data()[e];
    shown += mass;
    const double t = mass / top;
    const int widthClass = std::min(kLineWidthClasses - 1, int(t * kLineWidthClasses));
    const vtkIdType ends[2] = {vtkIdType(e / plan.cols()), vtkIdType(counts_.queries + e % plan.cols())};
    cells[widthClass]->InsertNextCell(2, ends);
    unsigned char rgba[4];
    massColor(t, rgba);
    colors[widthClass]->InsertNextTypedTuple(rgba);
  }
  counts_.massShown = total > 0 ? shown / total : 0;
  for (int c = 0; c < kLineWidthClasses; ++c) {
    auto poly = vtkSmartPointer<vtkPolyData>::New();
    poly->SetPoints(points);
    poly->SetLines(cells[c]);
    poly->GetCellData()->SetScalars(colors[c]);
    lines_[c]->GetMapper()->SetInputDataObject(poly);
    lines_[c]->GetMapper()->SetScalarModeToUseCellData();
    lines_[c]->GetMapper()->SetColorModeToDirectScalars();
  }
  updateLegend();
}

void CloudScene::updateLegend() {
  legend_[2]->SetInput(("\xe2\x97\x8f  queries  (" + std::to_string(counts_.queries) + ")").c_str());
  legend_[1]->SetInput(("\xe2\x97\x8f  keys  (" + std::to_string(counts_.keys) + ")").c_str());
  char text[160];
  std::snprintf(text, sizeof text, "lines: %d largest of %lld plan entries, %.4g%% of the mass", counts_.lines,
                counts_.entries, 100 * counts_.massShown);
  legend_[0]->SetInput(text);
}

void CloudScene::resetCamera() {
  vtkCamera* camera = renderer_->GetActiveCamera();
  camera->SetPosition(0, 0, 1);
  camera->SetFocalPoint(0, 0, 0);
  camera->SetViewUp(0, 1, 0);
  camera->Azimuth(35);
  camera->Elevation(30);
  camera->OrthogonalizeViewUp();
  renderer_->ResetCamera();
  camera->Zoom(1.15);
}

vtkRenderer* CloudScene::renderer() const { return renderer_; }

vtkIdType CloudScene::pointsDrawn() const {
  vtkIdType count = 0;
  for (vtkActor* a : {queryPoints_.Get(), keyPoints_.Get()})
    count += vtkPolyData::SafeDownCast(a->GetMapper()->GetInputDataObject(0, 0))->GetNumberOfVerts();
  return count;
}

vtkIdType CloudScene::linesDrawn() const {
  vtkIdType count = 0;
  for (const auto& a : lines_)
    count += vtkPolyData::SafeDownCast(a->GetMapper()->GetInputDataObject(0, 0))->GetNumberOfLines();
  return count;
}

void CloudScene::copyCamera(vtkCamera* from) {
  renderer_->GetActiveCamera()->DeepCopy(from);
  renderer_->ResetCameraClippingRange();
}

}  // namespace tl
