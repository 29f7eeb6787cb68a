#pragma once
// Shared by the GUI tests: one QApplication per process, the folder for screenshots and figures, and
// waiting on the event loop for a condition.
#include <QImage>
#include <QWidget>
#include <chrono>
#include <functional>
#include <string>

#include "session/session.h"

namespace tl::test {

void ensureApplication();         // QApplication with the app's default GL surface format
std::string outputDir();          // <build>/test-output/widgets, created on demand
// Processes events until `done` holds or `timeout` passes; returns done().
[[nodiscard]] bool waitUntil(const std::function<bool()>& done,
                             std::chrono::milliseconds timeout = std::chrono::seconds(60));
// The built-in session with a smaller cloud, so every test computes in milliseconds.
Session smallCloudSession(int n = 60);
Session gaussianSession(int n = 40);
std::string readBytes(const std::string& path);
// Number of distinct colours in the image: a blank or failed grab has one or two.
[[nodiscard]] int distinctColors(const QImage& image);
// Grabs `widget` until the grab has more than `minColors` distinct colours (GL and VTK views paint some time
// after their result arrives) or `timeout` passes; returns the last grab, for the caller to assert on.
[[nodiscard]] QImage grabWhenPainted(QWidget& widget, int minColors,
                                     std::chrono::milliseconds timeout = std::chrono::seconds(30));

}  // namespace tl::test
