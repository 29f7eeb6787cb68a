#include "support/gui_test_support.h"

#include <QApplication>
#include <QElapsedTimer>
#include <QSet>
#include <QSurfaceFormat>
#include <QThread>

#include "io/atomic_file.h"
#include "widgets/shell/session_files.h"

namespace tl::test {

void ensureApplication() {
  if (QApplication::instance()) return;
  QSurfaceFormat format;
  format.setVersion(3, 2);
  format.setProfile(QSurfaceFormat::CoreProfile);
  format.setDepthBufferSize(24);
  format.setSwapBehavior(QSurfaceFormat::DoubleBuffer);
  QSurfaceFormat::setDefaultFormat(format);
  static int argc = 1;
  static char name[] = "tl_widgets_tests";
  static char* argv[] = {name, nullptr};
  new QApplication(argc, argv);  // lives for the whole test process
}

std::string outputDir() {
  const std::string dir = std::string(TL_BINARY_DIR) + "/test-output/widgets";
  ensureDirectory(dir);
  return dir;
}

bool waitUntil(const std::function<bool()>& done, std::chrono::milliseconds timeout) {
  QElapsedTimer timer;
  timer.start();
  while (!done()) {
    if (timer.elapsed() > timeout.count()) return false;
    QApplication::processEvents(QEventLoop::AllEvents, 20);
    QThread::msleep(2);
  }
  return true;
}

Session smallCloudSession(int n) {
  Session s = pointCloudSession();
  s.source.params["n"] = static_cast<long long>(n);
  return s;
}

Session gaussianSession(int n) {
  Session s = pointCloudSession();
  s.source = SourceSpec::parse("synthetic:gaussian:n=" + std::to_string(n) + ",d=16,seed=3");
  return s;
}

std::string readBytes(const std::string& path) { return readFile(path); }

int distinctColors(const QImage& image) {
  QSet<QRgb> colors;
  const QImage rgb = image.convertToFormat(QImage::Format_RGB32);
  for (int y = 0; y < rgb.height(); y += 3)
    for (int x = 0; x < rgb.width(); x += 3) colors.insert(rgb.pixel(x, y));
  return int(colors.size());
}

QImage grabWhenPainted(QWidget& widget, int minColors, std::chrono::milliseconds timeout) {
  QImage shot;
  (void)waitUntil(
      [&] {
        shot = widget.grab().toImage();
        return distinctColors(shot) > minColors;
      },
      timeout);
  return shot;
}

}  // namespace tl::test
