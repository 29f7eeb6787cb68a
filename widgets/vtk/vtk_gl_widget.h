#pragma once
// The VTK bridge: a Qt6 QOpenGLWidget that hosts a vtkGenericOpenGLRenderWindow. Debian's
// QVTKOpenGLNativeWidget is built for Qt5, so the project carries this small replacement (see
// docs/building.md#vtk-in-qt6). VTK renders into its own framebuffer; paintGL blits it
// into the widget's. Mouse and wheel events go to a trackball-camera interactor.
#include <QOpenGLWidget>
#include <vtkNew.h>

class vtkGenericOpenGLRenderWindow;
class vtkGenericRenderWindowInteractor;
class vtkObject;

namespace tl {

class VtkGlWidget : public QOpenGLWidget {
  Q_OBJECT
 public:
  explicit VtkGlWidget(QWidget* parent = nullptr);
  ~VtkGlWidget() override;

  vtkGenericOpenGLRenderWindow* renderWindow() const { return window_; }

 protected:
  void initializeGL() override;
  void resizeGL(int w, int h) override;
  void paintGL() override;

  void mousePressEvent(QMouseEvent* event) override;
  void mouseReleaseEvent(QMouseEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void wheelEvent(QWheelEvent* event) override;

 private:
  void onMakeCurrent(vtkObject*, unsigned long, void*);
  void onIsCurrent(vtkObject*, unsigned long, void* callData);
  void onFrame(vtkObject*, unsigned long, void*);
  void forwardMouse(QMouseEvent* event, unsigned long vtkEvent);
  void finalizeWindow();

  vtkNew<vtkGenericOpenGLRenderWindow> window_;
  vtkNew<vtkGenericRenderWindowInteractor> interactor_;
  bool painting_ = false;
};

}  // namespace tl
