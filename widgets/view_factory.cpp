#include "view_factory.h"

#include "cloud3d_view.h"
#include "common/errors.h"
#include "convergence_view.h"
#include "plan_heatmap_view.h"

namespace tl {

const std::vector<std::string>& knownViews() {
  static const std::vector<std::string> names{"plan", "convergence", "cloud3d"};
  return names;
}

std::unique_ptr<View> makeView(const std::string& name, QWidget* parent) {
  if (name == "plan") return std::make_unique<PlanHeatmapView>(parent);
  if (name == "convergence") return std::make_unique<ConvergenceView>(parent);
  if (name == "cloud3d") return std::make_unique<Cloud3DView>(parent);
  std::string known;
  for (const auto& n : knownViews()) known += (known.empty() ? "" : ", ") + n;
  throw InvalidArgument("unknown view '" + name + "' (known views: " + known + ")");
}

}  // namespace tl
