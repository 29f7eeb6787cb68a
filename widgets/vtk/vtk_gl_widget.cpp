#include "widgets/vtk/vtk_gl_widget.h"

#include <QMouseEvent>
#include <QOpenGLContext>
#include <QOpenGLExtraFunctions>
#include <QWheelEvent>
#include <vtkCommand.h>
#include <vtkGenericOpenGLRenderWindow.h>
#include <vtkGenericRenderWindowInteractor.h>
#include <vtkInteractorStyleTrackballCamera.h>

namespace tl {

VtkGlWidget::VtkGlWidget(QWidget* parent) : QOpenGLWidget(parent) {
  setFocusPolicy(Qt::StrongFocus);
  // Qt owns the context; VTK renders into its own framebuffer and paintGL blits it (no VTK-side blit).
  window_->SetOwnContext(false);
  window_->SetFrameBlitModeToNoBlit();
  window_->SetReadyForRendering(false);
  window_->SetIsDirect(1);
  window_->SetSupportsOpenGL(1);
  window_->SetMultiSamples(0);
  window_->AddObserver(vtkCommand::WindowMakeCurrentEvent, this, &VtkGlWidget::onMakeCurrent);
  window_->AddObserver(vtkCommand::WindowIsCurrentEvent, this, &VtkGlWidget::onIsCurrent);
  window_->AddObserver(vtkCommand::WindowFrameEvent, this, &VtkGlWidget::onFrame);

  vtkNew<vtkInteractorStyleTrackballCamera> style;
  interactor_->SetInteractorStyle(style);
  // The interactor must not render by itself (it would render outside paintGL); it asks for a repaint.
  interactor_->EnableRenderOff();
  interactor_->SetRenderWindow(window_);
  interactor_->AddObserver(vtkCommand::RenderEvent, this, &VtkGlWidget::onFrame);
}

VtkGlWidget::~VtkGlWidget() {
  // ~QOpenGLWidget destroys the context after our members are gone: the hook must not fire then.
  if (context()) disconnect(context(), &QOpenGLContext::aboutToBeDestroyed, this, nullptr);
  makeCurrent();
  finalizeWindow();
  doneCurrent();
}

void VtkGlWidget::finalizeWindow() {
  if (window_->GetReadyForRendering()) {
    window_->Finalize();
    window_->SetReadyForRendering(false);
  }
}

void VtkGlWidget::initializeGL() {
  // GL resources die with the context (e.g. when the widget is re-parented into a floating dock).
  connect(context(), &QOpenGLContext::aboutToBeDestroyed, this, [this] {
    makeCurrent();
    finalizeWindow();
    doneCurrent();
  });
  window_->SetReadyForRendering(true);
  window_->SetMapped(1);
  window_->OpenGLInitContext();
  interactor_->Initialize();
  resizeGL(width(), height());
}

void VtkGlWidget::resizeGL(int w, int h) {
  const double ratio = devicePixelRatioF();
  const int pw = int(w * ratio), ph = int(h * ratio);
  interactor_->UpdateSize(pw, ph);
  window_->SetSize(pw, ph);
}

void VtkGlWidget::paintGL() {
  painting_ = true;
  window_->Render();
  QOpenGLExtraFunctions* f = context()->extraFunctions();
  f->glBindFramebuffer(GL_DRAW_FRAMEBUFFER, defaultFramebufferObject());
  window_->BlitDisplayFramebuffer();
  // The widget is composed over the window: an alpha below 1 would show through.
  f->glBindFramebuffer(GL_FRAMEBUFFER, defaultFramebufferObject());
  f->glColorMask(GL_FALSE, GL_FALSE, GL_FALSE, GL_TRUE);
  f->glClearColor(0, 0, 0, 1);
  f->glClear(GL_COLOR_BUFFER_BIT);
  f->glColorMask(GL_TRUE, GL_TRUE, GL_TRUE, GL_TRUE);
  painting_ = false;
}

// QOpenGLWidget::makeCurrent() would also rebind Qt's FBO and leave a black view; VTK only needs the context.
void VtkGlWidget::onMakeCurrent(vtkObject*, unsigned long, void*) {
  if (context()) context()->makeCurrent(context()->surface());
}

void VtkGlWidget::onIsCurrent(vtkObject*, unsigned long, void* callData) {
  *static_cast<bool*>(callData) = context() && QOpenGLContext::currentContext() == context();
}

void VtkGlWidget::onFrame(vtkObject*, unsigned long, void*) {
  if (!painting_) update();
}

void VtkGlWidget::forwardMouse(QMouseEvent* event, unsigned long vtkEvent) {
  const double ratio = devicePixelRatioF();
  const QPointF p = event->position();
  interactor_->SetEventInformationFlipY(int(p.x() * ratio), int(p.y() * ratio),
                                        (event->modifiers() & Qt::ControlModifier) ? 1 : 0,
                                        (event->modifiers() & Qt::ShiftModifier) ? 1 : 0);
  interactor_->InvokeEvent(vtkEvent, event);
}

void VtkGlWidget::mousePressEvent(QMouseEvent* event) {
  switch (event->button()) {
    case Qt::LeftButton: forwardMouse(event, vtkCommand::LeftButtonPressEvent); break;
    case Qt::MiddleButton: forwardMouse(event, vtkCommand::MiddleButtonPressEvent); break;
    case Qt::RightButton: forwardMouse(event, vtkCommand::RightButtonPressEvent); break;
    default: break;
  }
}

void VtkGlWidget::mouseReleaseEvent(QMouseEvent* event) {
  switch (event->button()) {
    case Qt::LeftButton: forwardMouse(event, vtkCommand::LeftButtonReleaseEvent); break;
    case Qt::MiddleButton: forwardMouse(event, vtkCommand::MiddleButtonReleaseEvent); break;
    case Qt::RightButton: forwardMouse(event, vtkCommand::RightButtonReleaseEvent); break;
    default: break;
  }
}

void VtkGlWidget::mouseMoveEvent(QMouseEvent* event) { forwardMouse(event, vtkCommand::MouseMoveEvent); }

void VtkGlWidget::wheelEvent(QWheelEvent* event) {
  const double ratio = devicePixelRatioF();
  const QPointF p = event->position();
  interactor_->SetEventInformationFlipY(int(p.x() * ratio), int(p.y() * ratio));
  const int delta = event->angleDelta().y();
  if (delta > 0) interactor_->InvokeEvent(vtkCommand::MouseWheelForwardEvent, event);
  else if (delta < 0) interactor_->InvokeEvent(vtkCommand::MouseWheelBackwardEvent, event);
}

}  // namespace tl
