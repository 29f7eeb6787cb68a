#pragma once
// Shared by the model GUI tests (LibTorch builds only). For the whole test process: the ViT model backend,
// a small generated Fashion-MNIST (TL_FASHION_MNIST_DIR; two classes, 64 test images) and a private
// settings folder (XDG_CONFIG_HOME), so the recent-checkpoints list starts empty and the user's stays
// untouched. Plus sessions on the fixture checkpoints and waiting for the window to show one.
#include <functional>
#include <string>

#include "session/session.h"
#include "widgets/shell/main_window.h"

namespace tl::test {

std::string scratchDir();                            // the process's temporary folder
std::string fixtureCheckpoint(const std::string& name);  // tests/fixtures/vit/<name>
// A model source on `checkpoint` and fashion-mnist:test:0, the given layer, head and swap scope, with
// Sinkhorn (T=5, eps=1) as the primary operator.
Session modelSession(const std::string& checkpoint, int layer = 0, int head = 0, SwapScope scope = SwapScope::None);
// Waits until the window's latest result satisfies `shown` (and every view has drawn it).
[[nodiscard]] bool waitForResult(const MainWindow& window, const std::function<bool(const SessionResult&)>& shown);

}  // namespace tl::test
