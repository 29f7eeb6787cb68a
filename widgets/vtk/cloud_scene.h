#pragma once
// The 3-D picture of a transport plan between point clouds: queries and keys as points in two colours
// and one line per plan entry (i, j), its width and opacity growing with the mass A_ij. Only the
// `maxLines` largest entries are drawn, so the scene stays interactive at n² entries.
// An overlay adds an operator's own structure: LOT's pivots with the flows query → pivot → key that
// make up its plan, or ESP's slice directions.
#include <vtkSmartPointer.h>
#include <vtkType.h>

#include "common/attention_input.h"
#include "ops/transport_plan.h"

class vtkActor;
class vtkCamera;
class vtkPoints;
class vtkRenderer;
class vtkTextActor;

namespace tl {

// Everything in the coordinates of Q and K (first three columns); empty matrices draw nothing.
struct CloudOverlay {
  MatD pivots;            // r × 3: LOT pivot locations, drawn larger in green
  MatD toPivots;          // n_q × r (LOT P1) and r × n_k (P2): when both are set, the lines are these
  MatD fromPivots;        //   flows through the pivots instead of the composed plan's entries
  MatD directions;        // L × 3: ESP slice directions, drawn as axes through the clouds' centre
  VecD directionWeights;  // L: their weights w_l (darker and wider = larger)

  bool drawsFlows() const { return pivots.size() && toPivots.size() && fromPivots.size(); }
};

struct CloudSceneCounts {
  int queries = 0, keys = 0;
  int pivots = 0;         // LOT pivots drawn
  int directions = 0;     // ESP slice directions drawn
  bool flows = false;     // lines are query → pivot → key flows rather than plan entries
  int lines = 0;          // weighted segments drawn
  long long entries = 0;  // nonzero segments available
  double massShown = 0;   // fraction of the total mass carried by the drawn lines
};

class CloudScene {
 public:
  static constexpr int kLineWidthClasses = 4;  // VTK line width is per actor: mass is binned into classes

  CloudScene();

  // Q and K rows are points; plan is n_q × n_k in attention scale.
  void update(const AttentionInput<double>& input, const Plan<double>& plan, int maxLines,
              const CloudOverlay& overlay = {});
  // Point sizes and line widths in pixels are multiplied by `scale` (high-resolution exports).
  void setPixelScale(double scale);
  void resetCamera();
  void copyCamera(vtkCamera* from);

  vtkRenderer* renderer() const;
  const CloudSceneCounts& counts() const { return counts_; }
  // What the VTK pipeline actually holds (vertices of both clouds; line cells over all width classes).
  vtkIdType pointsDrawn() const;
  vtkIdType linesDrawn() const;
  vtkIdType pivotsDrawn() const;
  vtkIdType directionsDrawn() const;

 private:
  struct Segment {
    vtkIdType from, to;
    double mass;
  };
  // `kept`: the segments to draw, largest mass first; `entries` and `totalMass` describe all candidates.
  void drawSegments(vtkPoints* points, const std::vector<Segment>& kept, long long entries, double totalMass);
  void drawDirections(const AttentionInput<double>& input, const CloudOverlay& overlay);
  void updateLegend();

  vtkSmartPointer<vtkRenderer> renderer_;
  vtkSmartPointer<vtkActor> queryPoints_, keyPoints_, pivotPoints_, directionAxes_;
  vtkSmartPointer<vtkActor> lines_[kLineWidthClasses];
  vtkSmartPointer<vtkTextActor> legend_[4];  // lines, keys, queries, overlay (empty without one)
  CloudSceneCounts counts_;
  double pixelScale_ = 1;
};

}  // namespace tl
