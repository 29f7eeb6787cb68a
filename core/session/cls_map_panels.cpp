#include "session/cls_map_panels.h"

#include <algorithm>

#include "common/errors.h"

namespace tl {
namespace {

std::vector<MatD> panelsOf(const VitTrace& trace, const ClsMapOptions& options, int layer, const PatchGrid& grid) {
  std::vector<MatD> panels;
  if (options.kind == ClsMapKind::Rollout) {
    std::vector<std::vector<MatD>> throughLayer;
    for (const VitLayerTrace& l : trace.layers) {
      throughLayer.emplace_back();
      for (const VitHeadTrace& h : l.heads) throughLayer.back().push_back(h.attention);
      panels.push_back(clsQueryMap(attentionRollout(throughLayer, options.fusion, options.residual), grid));
    }
    return panels;
  }
  for (const VitHeadTrace& h : trace.layers.at(size_t(layer)).heads)
    panels.push_back(options.kind == ClsMapKind::Query ? clsQueryMap(h.attention, grid) : clsKeyMap(h.attention, grid));
  return panels;
}

}  // namespace

const char* clsMapKindName(ClsMapKind kind) {
  switch (kind) {
    case ClsMapKind::Query: return "query";
    case ClsMapKind::Key: return "key";
    case ClsMapKind::Rollout: return "rollout";
  }
  return "query";
}

ClsMapKind parseClsMapKind(const std::string& name) {
  for (ClsMapKind k : {ClsMapKind::Query, ClsMapKind::Key, ClsMapKind::Rollout})
    if (name == clsMapKindName(k)) return k;
  throw InvalidArgument("[CLS] map kind '" + name + "' is not one of query, key, rollout");
}

const char* clsTraceName(ClsTrace trace) {
  switch (trace) {
    case ClsTrace::Original: return "original";
    case ClsTrace::Swapped: return "swapped";
    case ClsTrace::Difference: return "difference";
  }
  return "original";
}

ClsTrace parseClsTrace(const std::string& name) {
  for (ClsTrace t : {ClsTrace::Original, ClsTrace::Swapped, ClsTrace::Difference})
    if (name == clsTraceName(t)) return t;
  throw InvalidArgument("[CLS] map trace '" + name + "' is not one of original, swapped, difference");
}

ClsMaps clsMapsOf(const SessionResult& result, const ClsMapOptions& options) {
  if (!result.model) throw InvalidArgument("[CLS] maps need a model source");
  const ModelRun& model = *result.model;
  const ModelSourceSpec& source = result.session.source.model;
  const PatchGrid grid{model.config.gridSize(), model.config.gridSize()};

  ClsMaps maps;
  maps.trace = result.swapped ? options.trace : ClsTrace::Original;
  maps.panels = panelsOf(maps.trace == ClsTrace::Original ? model.trace : *result.swapped, options, source.layer, grid);
  if (maps.trace == ClsTrace::Difference) {
    const std::vector<MatD> original = panelsOf(model.trace, options, source.layer, grid);
    for (size_t p = 0; p < maps.panels.size(); ++p) maps.panels[p] -= original[p];
  }
  maps.selected = options.kind == ClsMapKind::Rollout ? source.layer : source.head;

  // One range over every panel, so equal colours mean equal values across heads (or depths).
  double lo = maps.panels.front().minCoeff(), hi = maps.panels.front().maxCoeff();
  for (const MatD& p : maps.panels) {
    lo = std::min(lo, p.minCoeff());
    hi = std::max(hi, p.maxCoeff());
  }
  if (maps.trace == ClsTrace::Difference) {  // symmetric, so the diverging map's white means "unchanged"
    hi = std::max(-lo, hi);
    lo = -hi;
  }
  maps.lo = lo;
  maps.hi = hi;
  return maps;
}

}  // namespace tl
