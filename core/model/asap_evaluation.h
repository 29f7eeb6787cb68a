#pragma once
// The frozen-layer replacement table of a compiled model (docs/operators/asap.md#frozen-layer-evaluation):
// the trained Sinkhorn checkpoint stays frozen and only the attention normaliser changes. For each row
// (Sinkhorn with T_b = 1 and 3, ASAP-0 and two-sided ASAP per compiled model given, their β = 0 baselines,
// the teacher) and each compiled layer, on the teacher's own inputs of that layer:
//   time          ms per layer-batch (all heads of the layer on one image), the operator alone, CPU double
//   output RMSE   of the head outputs A·V against the teacher's, over all tokens
//   attention     mean over heads and images of ‖A − A^T‖_F/‖A^T‖_F
//   row / column  mean and max of |A1 − 1| and |Aᵀ1 − 1|
// and overall, with the row's operator in every compiled layer at once: accuracy and agreement with the
// teacher model's prediction. The teacher A^T is the checkpoint's Sinkhorn run by the core operator in
// double on the same Q, K, V. Break-even per layer: ⌈t_fit/(t_teacher − t_ASAP)⌉ layer-batches, or never.
// Each image needs one teacher forward (all rows' layer metrics read it) and one model re-run per row; images are
// spread over the cores (OMP_NUM_THREADS), each on one thread, and summed in image order, so every number but the
// timings is the same for any thread count.
// Plain std/Eigen types (no LibTorch).
#include <optional>
#include <string>
#include <vector>

#include "common/feedback.h"
#include "data/fashion_mnist.h"
#include "model/vit_inference.h"
#include "ops/asap/compiled_asap.h"

namespace tl {

struct AsapEvaluationOptions {
  std::vector<std::string> compiled;  // folders of compiled models of this checkpoint (e.g. an LS and a KL fit)
  FashionMnistPart split = FashionMnistPart::Test;
  int limit = 0;  // first N images; 0 = all
};

struct FrozenLayerMetrics {
  int layer = 0;
  double ms = 0;  // per layer-batch
  double outputRmse = 0, attentionError = 0;
  double rowMean = 0, rowMax = 0, colMean = 0, colMax = 0;
  std::optional<long long> breakEven;  // ASAP rows: layer-batches until the fit pays off; none = never
  std::optional<double> fitR2;         // fitted rows: the calibration R² of the layer (overall: mean over layers)
};

struct FrozenLayerRow {
  // "sinkhorn T_b=1", "ASAP-0 (ls)", "ASAP (ls)", "beta=0 ASAP", "teacher", ...; compiled models that share a fit
  // kind are told apart by L ("ASAP (ls, L=16)": a slice-count ablation), else by folder.
  std::string name;
  std::string op;    // operator string
  std::vector<FrozenLayerMetrics> layers;
  FrozenLayerMetrics overall;  // means over the layers (ms: sum over layers)
  double accuracy = 0, agreement = 0;  // every compiled layer replaced
};

struct AsapEvaluation {
  std::string teacher;
  int images = 0;
  std::vector<int> layers;
  double teacherModelAccuracy = 0;  // the checkpoint as trained (float32)
  std::vector<FrozenLayerRow> rows;
};

// InvalidArgument when a compiled model does not belong to this checkpoint's layers or teacher.
AsapEvaluation evaluateCompiledAsap(const VitRunner& runner, const AsapEvaluationOptions& options,
                                    Feedback& feedback = noFeedback());

}  // namespace tl
