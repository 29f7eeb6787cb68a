#include "widgets/shell/x_display.h"

#include <X11/Xlib.h>

namespace tl {

bool haveXDisplay() {
  static const bool available = [] {
    Display* display = XOpenDisplay(nullptr);
    if (!display) return false;
    XCloseDisplay(display);
    return true;
  }();
  return available;
}

}  // namespace tl
