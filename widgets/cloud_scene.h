#pragma once
// The 3-D picture of a transport plan between point clouds: queries and keys as points in two colours
// and one line per plan entry (i, j), its width and opacity growing with the mass A_ij. Only the
// `maxLines` largest entries are drawn, so the scene stays interactive at n² entries.
#include <vtkSmartPointer.h>
#include <vtkType.h>

#include "common/attention_input.h"

class vtkActor;
class vtkCamera;
class vtkRenderer;
class vtkTextActor;

namespace tl {

struct CloudSceneCounts {
  int queries = 0, keys = 0;
  int lines = 0;          // plan entries drawn
  long long entries = 0;  // nonzero plan entries available
  double massShown = 0;   // fraction of the plan's total mass carried by the drawn lines
};

class CloudScene {
 public:
  static constexpr int kLineWidthClasses = 4;  // VTK line width is per actor: mass is binned into classes

  CloudScene();

  // Q and K rows are points (first three coordinates); plan is n_q × n_k in attention scale.
  void update(const AttentionInput<double>& input, const MatD& plan, int maxLines);
  // Point sizes and line widths in pixels are multiplied by `scale` (high-resolution exports).
  void setPixelScale(double scale);
  void resetCamera();
  void copyCamera(vtkCamera* from);

  vtkRenderer* renderer() const;
  const CloudSceneCounts& counts() const { return counts_; }
  // What the VTK pipeline actually holds (vertices of both clouds; line cells over all width classes).
  vtkIdType pointsDrawn() const;
  vtkIdType linesDrawn() const;

 private:
  void updateLegend();

  vtkSmartPointer<vtkRenderer> renderer_;
  vtkSmartPointer<vtkActor> queryPoints_, keyPoints_;
  vtkSmartPointer<vtkActor> lines_[kLineWidthClasses];
  vtkSmartPointer<vtkTextActor> legend_[3];
  CloudSceneCounts counts_;
  double pixelScale_ = 1;
};

}  // namespace tl
