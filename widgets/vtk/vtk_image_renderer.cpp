#include "widgets/vtk/vtk_image_renderer.h"

#include <QOpenGLContext>
#include <cstring>
#include <vtkImageData.h>
#include <vtkRenderWindow.h>
#include <vtkRenderer.h>
#include <vtkRendererCollection.h>
#include <vtkNew.h>
#include <vtkWindowToImageFilter.h>

namespace tl {

VtkImageRenderer::VtkImageRenderer() : window_(vtkSmartPointer<vtkRenderWindow>::New()) {
  window_->SetOffScreenRendering(1);
  window_->SetMultiSamples(8);
}

VtkImageRenderer::~VtkImageRenderer() { window_->Finalize(); }

QImage VtkImageRenderer::render(vtkRenderer* renderer, int width, int height) {
  // VTK switches the thread's GL context behind Qt's back; release Qt's first so that Qt's idea of the
  // current context stays true (VtkGlWidget asks Qt whether its context is current).
  if (QOpenGLContext* qt = QOpenGLContext::currentContext()) qt->doneCurrent();
  if (!window_->GetRenderers()->IsItemPresent(renderer)) window_->AddRenderer(renderer);
  window_->SetSize(width, height);
  window_->Render();

  vtkNew<vtkWindowToImageFilter> grab;
  grab->SetInput(window_);
  grab->SetInputBufferTypeToRGB();
  grab->ReadFrontBufferOff();
  grab->Update();
  vtkImageData* image = grab->GetOutput();
  int dims[3];
  image->GetDimensions(dims);
  auto* pixels = static_cast<unsigned char*>(image->GetScalarPointer());
  QImage out(dims[0], dims[1], QImage::Format_RGB888);
  // VTK's rows run bottom-up.
  for (int y = 0; y < dims[1]; ++y)
    std::memcpy(out.scanLine(dims[1] - 1 - y), pixels + size_t(y) * dims[0] * 3, size_t(dims[0]) * 3);
  window_->ReleaseCurrent();
  return out;
}

}  // namespace tl
