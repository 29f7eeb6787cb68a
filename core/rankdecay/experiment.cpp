#include "rankdecay/experiment.h"

#include <algorithm>
#include <cmath>
#include <memory>

#include "common/errors.h"
#include "rankdecay/random_matrices.h"

namespace tl::rankdecay {
namespace {

ModelRecorder& modelRecorder() {
  static ModelRecorder recorder;
  return recorder;
}

// The Sinkhorn-only curves need converged (exactly doubly stochastic) attention; marginal errors at
// rounding level count as converged.
constexpr double kConvergedMarginalError = 1e-9;
// Beyond this largest centred score the linearisation is off by more than ~15% per layer.
constexpr double kLinearisedMaxScore = 0.3;

std::vector<double> medianPerLayer(const std::vector<std::vector<double>>& perSample) {
  std::vector<double> out;
  for (size_t l = 0; l < perSample[0].size(); ++l) {
    std::vector<double> values;
    for (const auto& sample : perSample) values.push_back(sample[l]);
    out.push_back(median(values));
  }
  return out;
}

// Why the weight-only curves (printed, linearised, rigorous) do not apply here; empty when they do.
std::string sinkhornCurveReason(const OperatorSpec& op, const StackSpec& spec, double largestMarginalError) {
  if (spec.config != BlockConfig::San) return "the theory covers pure self-attention (no skips, no FFN)";
  if (spec.layerNorm != LayerNormPlace::None) return "LayerNorm present: the theory has none";
  if (op.family != "sinkhorn") return "assumes converged Sinkhorn attention (" + op.family + " is not)";
  if (largestMarginalError > kConvergedMarginalError)
    return "Sinkhorn not converged at this budget (largest marginal error " + std::to_string(largestMarginalError) +
           "); only the data bound holds";
  return {};
}

}  // namespace

std::string operatorLabel(const OperatorSpec& op) {
  return op.family == kTrainedOperator ? std::string(kTrainedOperator) : op.toString();
}

void installModelRecorder(ModelRecorder recorder) { modelRecorder() = std::move(recorder); }

std::vector<TheoryCurve> theoryCurves(const std::vector<SampleTheoryInputs>& samples, const OperatorSpec& op,
                                      const StackSpec& spec, double largestMarginalError) {
  std::vector<std::vector<double>> printed, linearised, rigorous, localRigorous, data;
  int vacuousP = 0, vacuousL = 0;
  std::vector<double> linearisedLayers;
  for (const SampleTheoryInputs& in : samples) {
    const SampleBounds b = sampleBounds(in);
    printed.push_back(b.printed);
    linearised.push_back(b.linearised);
    rigorous.push_back(b.rigorous);
    localRigorous.push_back(b.localRigorous);
    if (!in.dataBound.empty()) data.push_back(b.data);
    vacuousP += vacuous(b.printedSqrtCr0);
    vacuousL += vacuous(b.linearisedSqrtCr0);
    const auto firstLarge = std::find_if(in.maxCentredScore.begin(), in.maxCentredScore.end(),
                                         [](double a) { return a > kLinearisedMaxScore; });
    linearisedLayers.push_back(double(firstLarge - in.maxCentredScore.begin()));
  }
  const std::string reason = sinkhornCurveReason(op, spec, largestMarginalError);
  const double count = double(samples.size());

  TheoryCurve p{"printed", "paper's Thm 2 as printed (not guaranteed: √n too small per layer)", reason.empty(),
                reason, medianPerLayer(printed), {}, vacuousP / count, 0};
  TheoryCurve l{"linearised", "linearised estimate, not a bound (sharp only as scores → 0)", reason.empty(), reason,
                medianPerLayer(linearised), {}, vacuousL / count, int(median(linearisedLayers))};
  TheoryCurve r{"rigorous", "rigorous bound (Sinkhorn, converged)", reason.empty(), reason,
                medianPerLayer(rigorous), {}, 0, 0};
  // The local variant needs the measured layers, which only a pure-SAN stack without LayerNorm records.
  if (!localRigorous.empty() && localRigorous[0].size() > 1) r.localLog10 = medianPerLayer(localRigorous);
  TheoryCurve d{"data", "exact one-step data bound (any normaliser)", !data.empty(), "", {}, {}, 0, 0};
  if (data.empty())
    d.reason = spec.config != BlockConfig::San ? "the one-step identity covers pure self-attention layers only"
                                               : "LayerNorm present: the one-step identity has none";
  else
    d.log10 = medianPerLayer(data);
  return {p, l, r, d};
}

RankDecayResult runRankDecay(const RankDecayRequest& request, Feedback& feedback) {
  if (request.operators.empty()) throw InvalidArgument("rank decay: give at least one operator (--op)");
  if (request.source.kind == SourceKind::Random && request.wantOutputs)
    throw InvalidArgument("rank decay: random matrices have no layer outputs; use 'paths' with a random: source");
  if (request.seeds < 1) throw InvalidArgument("rank decay: --seeds must be ≥ 1");

  RankDecayResult result;
  result.request = request;
  const size_t count = request.operators.size();
  for (size_t i = 0; i < count; ++i) {
    const OperatorSpec& spec = request.operators[i];
    Feedback part(feedback, [&](double f, const std::string& stage) {
      feedback.setProgress((double(i) + f) / double(count), spec.family + ": " + stage);
    });
    OperatorCurves curves;
    curves.op = spec;
    const bool trained = spec.family == kTrainedOperator;
    std::unique_ptr<Operator> op = trained ? nullptr : OperatorRegistry::builtin().create(spec);

    if (request.source.kind == SourceKind::Random) {
      if (trained) throw InvalidArgument("rank decay: 'trained' keeps a checkpoint's normaliser; random: has none");
      curves.paths = randomMatrixPaths(*op, randomSpec(request.source), request.paths, part);
      result.operators.push_back(std::move(curves));
      continue;
    }

    AttentionRecord record;
    if (request.source.kind == SourceKind::Stack) {
      if (trained) throw InvalidArgument("rank decay: 'trained' keeps a checkpoint's normaliser; stack: has none");
      const StackSpec stack = stackSpec(request.source, request.config);
      StackRun run = runSyntheticStack(*op, stack, request.paths.seed, request.seeds, part);
      record = std::move(run.record);
      double worstError = 0;
      for (const MarginalErrors& e : record.errors) worstError = std::max({worstError, e.rowMax, e.colMax});
      if (request.wantOutputs) curves.theory = theoryCurves(run.theory, spec, stack, worstError);
    } else {
      if (!modelRecorder())
        throw ResourceError("checkpoint sources need LibTorch; this tlens was built without it (TL_TORCH=OFF)");
      record = modelRecorder()(request.source, trained ? nullptr : &spec, request.config,
                               parseSkipScope("all"), part);
    }
    if (request.wantPaths) curves.paths = sampleAttentionPaths(record, request.paths, part);
    if (request.wantOutputs) curves.outputs = outputStatistics(record, part);
    curves.attention = attentionStatistics(record, part);
    result.operators.push_back(std::move(curves));
  }
  feedback.setProgress(1.0, "done");
  return result;
}

}  // namespace tl::rankdecay
