#include "widgets/vtk/cloud_scene.h"

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
#include <utility>
#include <vector>

#include "widgets/plot/plot_style.h"

namespace tl {
namespace {

constexpr double kPointSize = 7;
constexpr double kPivotSize = 13;
QColor pivotColor() { return QColor(30, 150, 60); }
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

vtkSmartPointer<vtkPolyData> pivotCloudOrEmpty(const MatD& Z) {
  return Z.size() ? pointCloud(Z) : vtkSmartPointer<vtkPolyData>::New();
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
  pivotPoints_ = makeActor(empty);
  setColor(keyPoints_, colColor());
  setColor(pivotPoints_, pivotColor());
  for (vtkActor* a : {queryPoints_.Get(), keyPoints_.Get(), pivotPoints_.Get()}) {
    a->GetProperty()->SetRenderPointsAsSpheres(true);
    renderer_->AddActor(a);
  }
  for (auto& actor : lines_) {
    actor = makeActor(empty);
    renderer_->AddActor(actor);
  }
  directionAxes_ = makeActor(empty);
  renderer_->AddActor(directionAxes_);
  legend_[0] = makeLabel(QColor(60, 60, 60), 0);
  legend_[1] = makeLabel(colColor().darker(115), 1);
  legend_[2] = makeLabel(rowColor().darker(115), 2);
  legend_[3] = makeLabel(pivotColor().darker(115), 3);
  for (auto& label : legend_) renderer_->AddActor2D(label);
  setPixelScale(1);
}

void CloudScene::setPixelScale(double scale) {
  pixelScale_ = scale;
  for (vtkActor* a : {queryPoints_.Get(), keyPoints_.Get()}) a->GetProperty()->SetPointSize(kPointSize * scale);
  pivotPoints_->GetProperty()->SetPointSize(kPivotSize * scale);
  for (int c = 0; c < kLineWidthClasses; ++c) lines_[c]->GetProperty()->SetLineWidth(kLineWidths[c] * scale);
  directionAxes_->GetProperty()->SetLineWidth(3 * scale);
  for (int row = 0; row < 4; ++row) {
    legend_[row]->GetTextProperty()->SetFontSize(int(15 * scale));
    legend_[row]->SetPosition(12 * scale, (10 + 22 * row) * scale);
  }
}

namespace {

// The `maxLines` largest positive masses of a stream of (index, mass) candidates, largest first; ties keep
// index order so the picture is reproducible. Memory O(maxLines) whatever the number of candidates (n² plan
// entries), so a large plan is scanned row block by row block, never held whole.
class LargestMasses {
 public:
  explicit LargestMasses(int maxLines) : capacity_(size_t(std::max(maxLines, 0))) {}
  void offer(long long index, double mass) {
    if (!(mass > 0)) return;
    ++positives_;
    total_ += mass;
    keep({index, mass});
  }
  // offer() for masses[0, n) at indices first, first + 1, …: the same lines, with the count, the total and the
  // largest taken as packets (a chain of scalar adds, one per entry, was most of the view's time on a dense plan
  // of 16 million entries), and the entries only of a run that holds one able to enter the heap.
  void offerRun(long long first, const double* masses, Eigen::Index n) {
    const Eigen::Map<const Eigen::ArrayXd> run(masses, n);
    positives_ += (run > 0).count();
    total_ += run.max(0.0).sum();
    const bool full = heap_.size() >= capacity_;
    if (n == 0 || capacity_ == 0 || (full && run.maxCoeff() < heap_.front().mass)) return;
    for (Eigen::Index k = 0; k < n; ++k)
      if (masses[k] > 0) keep({first + k, masses[k]});
  }
  long long positives() const { return positives_; }
  double total() const { return total_; }
  // (index, mass), largest first.
  std::vector<std::pair<long long, double>> largestFirst() const {
    std::vector<Candidate> sorted = heap_;
    std::sort(sorted.begin(), sorted.end(), better);
    std::vector<std::pair<long long, double>> out;
    for (const Candidate& c : sorted) out.emplace_back(c.index, c.mass);
    return out;
  }

 private:
  struct Candidate {
    long long index;
    double mass;
  };
  // The heap's front is the worst kept candidate.
  static bool better(const Candidate& a, const Candidate& b) {
    return a.mass > b.mass || (a.mass == b.mass && a.index < b.index);
  }
  void keep(const Candidate& c) {
    if (heap_.size() < capacity_) {
      heap_.push_back(c);
      std::push_heap(heap_.begin(), heap_.end(), better);
    } else if (capacity_ > 0 && better(c, heap_.front())) {
      std::pop_heap(heap_.begin(), heap_.end(), better);
      heap_.back() = c;
      std::push_heap(heap_.begin(), heap_.end(), better);
    }
  }
  size_t capacity_;
  std::vector<Candidate> heap_;
  long long positives_ = 0;
  double total_ = 0;
};

}  // namespace

void CloudScene::update(const AttentionInput<double>& input, const Plan<double>& plan, int maxLines,
                        const CloudOverlay& overlay) {
  auto queries = pointCloud(input.Q);
  auto keys = pointCloud(input.K);
  queryPoints_->GetMapper()->SetInputDataObject(queries);
  keyPoints_->GetMapper()->SetInputDataObject(keys);
  pivotPoints_->GetMapper()->SetInputDataObject(pivotCloudOrEmpty(overlay.pivots));
  counts_ = {};
  counts_.queries = int(input.Q.rows());
  counts_.keys = int(input.K.rows());
  counts_.pivots = int(overlay.pivots.rows());
  counts_.flows = overlay.drawsFlows();

  // Lines share one point set: queries, then keys, then pivots.
  auto points = vtkSmartPointer<vtkPoints>::New();
  points->DeepCopy(queries->GetPoints());
  points->InsertPoints(counts_.queries, counts_.keys, 0, keys->GetPoints());
  const vtkIdType firstKey = counts_.queries, firstPivot = counts_.queries + counts_.keys;
  std::vector<Segment> kept;
  LargestMasses largest(maxLines);
  if (counts_.flows) {
    const MatD& P1 = overlay.toPivots;
    const MatD& P2 = overlay.fromPivots;
    auto pivots = pointCloud(overlay.pivots);
    points->InsertPoints(firstPivot, counts_.pivots, 0, pivots->GetPoints());
    const long long n1 = P1.size();
    for (long long e = 0; e < n1; ++e) largest.offer(e, P1.data()[e]);
    for (long long e = 0; e < P2.size(); ++e) largest.offer(n1 + e, P2.data()[e]);
    for (const auto& [e, mass] : largest.largestFirst()) {
      if (e < n1)
        kept.push_back({vtkIdType(e / P1.cols()), firstPivot + vtkIdType(e % P1.cols()), mass});
      else
        kept.push_back({firstPivot + vtkIdType((e - n1) / P2.cols()), firstKey + vtkIdType((e - n1) % P2.cols()), mass});
    }
  } else {
    const long long cols = plan.cols();
    // A sparse plan: its O(n·W) or O(L·n) entries; others row block by row block.
    if (!plan.forEachStoredEntry([&](const PlanEntry<double>& e) { largest.offer(e.row * cols + e.col, e.value); })) {
      plan.forEachRowBlock(256, [&](Eigen::Index first, const auto& rows) {
        for (Eigen::Index i = 0; i < rows.rows(); ++i) largest.offerRun((first + i) * cols, rows.row(i).data(), cols);
      });
    }
    for (const auto& [e, mass] : largest.largestFirst())
      kept.push_back({vtkIdType(e / cols), firstKey + vtkIdType(e % cols), mass});
  }
  drawSegments(points, kept, largest.positives(), largest.total());
  drawDirections(input, overlay);
  updateLegend();
}

void CloudScene::drawSegments(vtkPoints* points, const std::vector<Segment>& kept, long long entries,
                              double totalMass) {
  counts_.entries = entries;
  counts_.lines = int(kept.size());
  const double top = kept.empty() ? 1 : kept.front().mass;
  vtkSmartPointer<vtkCellArray> cells[kLineWidthClasses];
  vtkSmartPointer<vtkUnsignedCharArray> colors[kLineWidthClasses];
  for (int c = 0; c < kLineWidthClasses; ++c) {
    cells[c] = vtkSmartPointer<vtkCellArray>::New();
    colors[c] = vtkSmartPointer<vtkUnsignedCharArray>::New();
    colors[c]->SetNumberOfComponents(4);
    colors[c]->SetName("mass");
  }
  double shown = 0;
  for (const Segment& s : kept) {
    shown += s.mass;
    const double t = s.mass / top;
    const int widthClass = std::min(kLineWidthClasses - 1, int(t * kLineWidthClasses));
    const vtkIdType ends[2] = {s.from, s.to};
    cells[widthClass]->InsertNextCell(2, ends);
    unsigned char rgba[4];
    massColor(t, rgba);
    colors[widthClass]->InsertNextTypedTuple(rgba);
  }
  counts_.massShown = totalMass > 0 ? shown / totalMass : 0;
  for (int c = 0; c < kLineWidthClasses; ++c) {
    auto poly = vtkSmartPointer<vtkPolyData>::New();
    poly->SetPoints(points);
    poly->SetLines(cells[c]);
    poly->GetCellData()->SetScalars(colors[c]);
    lines_[c]->GetMapper()->SetInputDataObject(poly);
    lines_[c]->GetMapper()->SetScalarModeToUseCellData();
    lines_[c]->GetMapper()->SetColorModeToDirectScalars();
  }
}

// Each direction θ_l is an axis through the centre of both clouds, reaching just past the farthest point,
// so the slices read as the lines the tokens are projected onto; darker and more opaque = larger w_l.
void CloudScene::drawDirections(const AttentionInput<double>& input, const CloudOverlay& overlay) {
  auto poly = vtkSmartPointer<vtkPolyData>::New();
  counts_.directions = int(overlay.directions.rows());
  if (counts_.directions) {
    const MatD Q = input.Q.leftCols(3), K = input.K.leftCols(3);
    const Eigen::RowVector3d centre = (Q.colwise().sum() + K.colwise().sum()) / double(Q.rows() + K.rows());
    const double reach = 1.15 * std::max((Q.rowwise() - centre).rowwise().norm().maxCoeff(),
                                         (K.rowwise() - centre).rowwise().norm().maxCoeff());
    const VecD& w = overlay.directionWeights;
    const bool weighted = w.size() == counts_.directions && w.maxCoeff() > 0;
    auto points = vtkSmartPointer<vtkPoints>::New();
    auto cells = vtkSmartPointer<vtkCellArray>::New();
    auto colors = vtkSmartPointer<vtkUnsignedCharArray>::New();
    colors->SetNumberOfComponents(4);
    for (int l = 0; l < counts_.directions; ++l) {
      const Eigen::RowVector3d axis = overlay.directions.row(l).leftCols(3).normalized() * reach;
      const Eigen::RowVector3d a = centre - axis, b = centre + axis;
      const vtkIdType ends[2] = {points->InsertNextPoint(a.data()), points->InsertNextPoint(b.data())};
      cells->InsertNextCell(2, ends);
      const double t = weighted ? w(l) / w.maxCoeff() : 1;
      const auto shade = static_cast<unsigned char>(150 - 130 * t);
      const unsigned char rgba[4] = {shade, shade, shade, static_cast<unsigned char>(90 + 165 * t)};
      colors->InsertNextTypedTuple(rgba);
    }
    poly->SetPoints(points);
    poly->SetLines(cells);
    poly->GetCellData()->SetScalars(colors);
  }
  directionAxes_->GetMapper()->SetInputDataObject(poly);
  directionAxes_->GetMapper()->SetScalarModeToUseCellData();
  directionAxes_->GetMapper()->SetColorModeToDirectScalars();
}

void CloudScene::updateLegend() {
  std::string overlay;
  if (counts_.pivots) overlay = "\xe2\x97\x8f  LOT pivots  (" + std::to_string(counts_.pivots) + ")";
  else if (counts_.directions)
    overlay = "\xe2\x80\x94  ESP slice directions  (" + std::to_string(counts_.directions) + "; darker = larger w_l)";
  const QColor overlayColor = counts_.pivots ? pivotColor().darker(115) : QColor(60, 60, 60);
  legend_[3]->GetTextProperty()->SetColor(overlayColor.redF(), overlayColor.greenF(), overlayColor.blueF());
  legend_[3]->SetInput(overlay.c_str());
  legend_[2]->SetInput(("\xe2\x97\x8f  queries  (" + std::to_string(counts_.queries) + ")").c_str());
  legend_[1]->SetInput(("\xe2\x97\x8f  keys  (" + std::to_string(counts_.keys) + ")").c_str());
  char text[160];
  std::snprintf(text, sizeof text, "lines: %d largest of %lld %s (%.4g%% of the mass)", counts_.lines,
                counts_.entries, counts_.flows ? "flows via pivots" : "plan entries", 100 * counts_.massShown);
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

vtkIdType CloudScene::directionsDrawn() const {
  return vtkPolyData::SafeDownCast(directionAxes_->GetMapper()->GetInputDataObject(0, 0))->GetNumberOfLines();
}

vtkIdType CloudScene::pivotsDrawn() const {
  return vtkPolyData::SafeDownCast(pivotPoints_->GetMapper()->GetInputDataObject(0, 0))->GetNumberOfVerts();
}

void CloudScene::copyCamera(vtkCamera* from) {
  renderer_->GetActiveCamera()->DeepCopy(from);
  renderer_->ResetCameraClippingRange();
}

}  // namespace tl
