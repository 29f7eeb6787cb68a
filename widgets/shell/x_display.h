#pragma once
// Debian's VTK renders through X only (no EGL, no OSMesa). Asking before VTK does turns a missing display
// into a message instead of VTK's abort().
namespace tl {

bool haveXDisplay();  // an X server answers on $DISPLAY (checked once)

}  // namespace tl
