#include "widgets/shell/view_factory.h"

#include "common/errors.h"
#include "widgets/views/asap_view.h"
#include "widgets/views/banded_view.h"
#include "widgets/views/certificates_view.h"
#include "widgets/views/cls_map_view.h"
#include "widgets/views/compare_view.h"
#include "widgets/views/convergence_view.h"
#include "widgets/views/esp_view.h"
#include "widgets/views/lot_view.h"
#include "widgets/views/plan_heatmap_view.h"
#include "widgets/views/prediction_view.h"
#include "widgets/views/rank_decay_view.h"
#include "widgets/vtk/cloud3d_view.h"

namespace tl {

const std::vector<std::string>& knownViews() {
  static const std::vector<std::string> names{"plan", "convergence", "cloud3d", "compare", "esp",
                                              "lot", "banded", "certificates", "asap", "cls", "prediction", "rank_decay"};
  return names;
}

std::unique_ptr<View> makeView(const std::string& name, QWidget* parent) {
  if (name == "plan") return std::make_unique<PlanHeatmapView>(parent);
  if (name == "convergence") return std::make_unique<ConvergenceView>(parent);
  if (name == "cloud3d") return std::make_unique<Cloud3DView>(parent);
  if (name == "compare") return std::make_unique<CompareView>(parent);
  if (name == "esp") return std::make_unique<EspView>(parent);
  if (name == "lot") return std::make_unique<LotView>(parent);
  if (name == "banded") return std::make_unique<BandedView>(parent);
  if (name == "certificates") return std::make_unique<CertificatesView>(parent);
  if (name == "asap") return std::make_unique<AsapView>(parent);
  if (name == "cls") return std::make_unique<ClsMapView>(parent);
  if (name == "prediction") return std::make_unique<PredictionView>(parent);
  if (name == "rank_decay") return std::make_unique<RankDecayView>(parent);
  std::string known;
  for (const auto& n : knownViews()) known += (known.empty() ? "" : ", ") + n;
  throw InvalidArgument("unknown view '" + name + "' (known views: " + known + ")");
}

}  // namespace tl
