#pragma once
// The desktop app's OpenMP threads sleep while they wait instead of spinning (OMP_WAIT_POLICY=passive), unless
// the user chose a policy. The Engine's operators run their passes on every core while the GUI thread and the
// 3-D view's renderer draw the previous result; threads spinning at a barrier or after a pass took the cores the
// drawing needed. On two shared cores a T-slider move at n = 512 reached the screen in 524 ms median with the
// active policy and in 224 ms with passive waits, in runs side by side (README, Performance).
//
// libgomp reads the variable once, before main() runs, so the app sets it and starts itself again (the same
// process: exec keeps its id). Call first thing in main(); returns when nothing needs to change or exec failed.

namespace tl {

void preferPassiveOpenMpWaits(char** argv);

}  // namespace tl
