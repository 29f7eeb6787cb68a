#pragma once
// [CLS] maps of a vision transformer's attention: what the [CLS] token reads from the image patches, how much
// the patches read from [CLS], and attention rollout across layers (Abnar & Zuidema, "Quantifying attention
// flow in transformers", 2020), for any operator's plans. Attention is in attention scale (rows = queries),
// token 0 is [CLS] and tokens 1..rows·cols are the patches in row-major order (docs/formats.md#token-order).
#include <vector>

#include "common/matrix.h"

namespace tl {

struct PatchGrid {
  int rows = 0, cols = 0;
  int patches() const { return rows * cols; }
};

// Row 0 of A over the patch columns, as a rows × cols image: the [CLS] query's attention.
MatD clsQueryMap(const MatD& attention, const PatchGrid& grid);
// Column 0 of A over the patch rows, as a rows × cols image: how much each patch attends to [CLS].
MatD clsKeyMap(const MatD& attention, const PatchGrid& grid);

enum class HeadFusion { Mean, Max, Min };
const char* headFusionName(HeadFusion fusion);
HeadFusion parseHeadFusion(const std::string& name);  // "mean" | "max" | "min"; InvalidArgument otherwise

// Rollout over layers 0..L−1 (layers[l][h] is head h of layer l, all N × N): per layer the heads are fused
// entry-wise, mixed with the residual stream, Â_l = (1 − residual)·A_l + residual·I, and its rows scaled to
// sum to 1 (max/min fusion and signed plans do not keep rows at 1); R = Â_{L−1} ⋯ Â_0. Returns R (N × N);
// clsQueryMap(R, grid) is the rollout map. A row that sums to 0 after mixing is left as it is.
MatD attentionRollout(const std::vector<std::vector<MatD>>& layers, HeadFusion fusion, double residual = 0.5);

}  // namespace tl
