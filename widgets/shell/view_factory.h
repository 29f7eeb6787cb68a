#pragma once
// View names as they appear in Session::views and viewState, and the views they make.
#include <memory>
#include <string>
#include <vector>

#include "widgets/views/view.h"

namespace tl {

// "plan", "convergence", "cloud3d", "compare", "esp", "lot", "banded", "certificates", "cls", "prediction"
const std::vector<std::string>& knownViews();
// Throws InvalidArgument listing the known names.
std::unique_ptr<View> makeView(const std::string& name, QWidget* parent = nullptr);

}  // namespace tl
