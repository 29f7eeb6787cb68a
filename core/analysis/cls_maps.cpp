#include "analysis/cls_maps.h"

#include <string>

#include "common/errors.h"

namespace tl {
namespace {

void checkGrid(const MatD& attention, const PatchGrid& grid, const char* what) {
  if (grid.rows <= 0 || grid.cols <= 0)
    throw InvalidArgument(std::string(what) + ": the patch grid must be at least 1×1");
  if (attention.rows() != attention.cols() || attention.rows() != grid.patches() + 1)
    throw InvalidArgument(std::string(what) + ": attention is " + std::to_string(attention.rows()) + "×" +
                          std::to_string(attention.cols()) + " but a " + std::to_string(grid.rows) + "×" +
                          std::to_string(grid.cols) + " patch grid with [CLS] needs " +
                          std::to_string(grid.patches() + 1) + "×" + std::to_string(grid.patches() + 1));
}

MatD asGrid(const VecD& patchValues, const PatchGrid& grid) {
  return Eigen::Map<const MatD>(patchValues.data(), grid.rows, grid.cols);
}

MatD fuseHeads(const std::vector<MatD>& heads, HeadFusion fusion) {
  MatD fused = heads.front();
  for (size_t h = 1; h < heads.size(); ++h) {
    if (heads[h].rows() != fused.rows() || heads[h].cols() != fused.cols())
      throw InvalidArgument("attention rollout: the heads of a layer differ in size");
    switch (fusion) {
      case HeadFusion::Mean: fused += heads[h]; break;
      case HeadFusion::Max: fused = fused.cwiseMax(heads[h]); break;
      case HeadFusion::Min: fused = fused.cwiseMin(heads[h]); break;
    }
  }
  if (fusion == HeadFusion::Mean) fused /= double(heads.size());
  return fused;
}

}  // namespace

MatD clsQueryMap(const MatD& attention, const PatchGrid& grid) {
  checkGrid(attention, grid, "[CLS] query map");
  return asGrid(attention.row(0).tail(grid.patches()).transpose(), grid);
}

MatD clsKeyMap(const MatD& attention, const PatchGrid& grid) {
  checkGrid(attention, grid, "[CLS] key map");
  return asGrid(attention.col(0).tail(grid.patches()), grid);
}

const char* headFusionName(HeadFusion fusion) {
  switch (fusion) {
    case HeadFusion::Mean: return "mean";
    case HeadFusion::Max: return "max";
    case HeadFusion::Min: return "min";
  }
  return "mean";
}

HeadFusion parseHeadFusion(const std::string& name) {
  for (HeadFusion f : {HeadFusion::Mean, HeadFusion::Max, HeadFusion::Min})
    if (name == headFusionName(f)) return f;
  throw InvalidArgument("head fusion '" + name + "' is not one of mean, max, min");
}

MatD attentionRollout(const std::vector<std::vector<MatD>>& layers, HeadFusion fusion, double residual) {
  if (layers.empty() || layers.front().empty()) throw InvalidArgument("attention rollout needs at least one layer and head");
  if (!(residual >= 0 && residual <= 1)) throw InvalidArgument("attention rollout: residual must lie in [0, 1]");
  const Eigen::Index n = layers.front().front().rows();
  MatD rollout = MatD::Identity(n, n);
  for (const auto& heads : layers) {
    if (heads.empty()) throw InvalidArgument("attention rollout: a layer has no heads");
    const MatD fused = fuseHeads(heads, fusion);
    if (fused.rows() != n || fused.cols() != n) throw InvalidArgument("attention rollout: layers differ in size");
    MatD mixed = (1 - residual) * fused + residual * MatD::Identity(n, n);
    for (Eigen::Index i = 0; i < n; ++i) {
      const double sum = mixed.row(i).sum();
      if (sum != 0) mixed.row(i) /= sum;
    }
    rollout = mixed * rollout;
  }
  return rollout;
}

}  // namespace tl
