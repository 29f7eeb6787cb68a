#pragma once
// Renders a VTK renderer into a QImage through an offscreen X render window. Used for every 3-D export
// (GUI menu and `tlens render`) and as the on-screen view under QT_QPA_PLATFORM=offscreen, where a
// QOpenGLWidget cannot be shown. Needs an X display (haveXDisplay()).
#include <QImage>
#include <vtkSmartPointer.h>

class vtkRenderer;
class vtkRenderWindow;

namespace tl {

class VtkImageRenderer {
 public:
  VtkImageRenderer();
  ~VtkImageRenderer();
  VtkImageRenderer(const VtkImageRenderer&) = delete;
  VtkImageRenderer& operator=(const VtkImageRenderer&) = delete;

  // `renderer` joins this window for good: a VTK renderer keeps its GL resources in one context.
  QImage render(vtkRenderer* renderer, int width, int height);

 private:
  vtkSmartPointer<vtkRenderWindow> window_;
};

}  // namespace tl
