// The frozen-layer replacement table (docs/operators/asap.md#frozen-layer-evaluation). No LibTorch here.
#include "model/asap_evaluation.h"

#include <chrono>
#include <cmath>
#include <filesystem>
#include <map>

#include "analysis/plan_distance.h"
#include "common/errors.h"
#include "model/asap_compiler.h"
#include "ops/registry.h"
#include "vit/model_image.h"

namespace tl {
namespace {

struct RowSpec {
  std::string name, op;
  const CompiledAsap* compiled = nullptr;  // for the break-even of ASAP rows
};

// A copy of `c` with every β = 0 (the zero dual in cost units), in a temporary folder removed with it.
struct ZeroBetaModel {
  std::string dir;
  explicit ZeroBetaModel(CompiledAsap c) {
    for (auto& l : c.layers) l.beta.setZero();
    dir = (std::filesystem::temp_directory_path() /
           ("tl-asap-beta0-" + std::to_string(std::chrono::steady_clock::now().time_since_epoch().count())))
              .string();
    saveCompiledAsap(dir, c);
  }
  ~ZeroBetaModel() {
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
  }
};

void accumulate(FrozenLayerMetrics& m, const PlanResult<double>& r, const MatD& referencePlan, const MatD& referenceOut,
                double seconds) {
  const MatD& A = r.plan.dense();
  m.ms += 1e3 * seconds;
  m.outputRmse += rmsDifference(*r.output, referenceOut);
  m.attentionError += relativeFrobenius(A, referencePlan);
  const VecD rows = (A.rowwise().sum().array() - 1).abs(), cols = (A.colwise().sum().transpose().array() - 1).abs();
  m.rowMean += rows.mean();
  m.rowMax = std::max(m.rowMax, rows.maxCoeff());
  m.colMean += cols.mean();
  m.colMax = std::max(m.colMax, cols.maxCoeff());
}

}  // namespace

AsapEvaluation evaluateCompiledAsap(const VitRunner& runner, const AsapEvaluationOptions& o, Feedback& feedback) {
  const VitConfig& config = runner.config();
  if (o.compiled.empty()) throw InvalidArgument("asap-eval needs at least one compiled model (--compiled DIR)");
  std::vector<CompiledAsap> models;
  for (const auto& dir : o.compiled) models.push_back(loadCompiledAsap(dir));
  const CompiledAsap& first = models.front();
  AsapEvaluation result;
  result.teacher = config.attention.toString();
  for (const auto& l : first.layers) result.layers.push_back(l.layer);
  for (size_t i = 0; i < models.size(); ++i) {
    if (models[i].teacher != result.teacher)
      throw InvalidArgument(o.compiled[i] + " was compiled for the teacher " + models[i].teacher + ", not " + result.teacher);
    for (const auto& l : models[i].layers)
      if (l.layer >= config.numLayers || l.slices.cols() != config.headDim)
        throw InvalidArgument(o.compiled[i] + ": layer " + std::to_string(l.layer) + " does not fit this checkpoint");
  }

  const std::string eps = "eps=" + formatValue(first.eps);
  std::vector<RowSpec> specs = {{"sinkhorn T_b=1", "sinkhorn:T=1," + eps}, {"sinkhorn T_b=3", "sinkhorn:T=3," + eps}};
  std::vector<std::unique_ptr<ZeroBetaModel>> baselines;
  for (size_t i = 0; i < models.size(); ++i) {
    const std::string asap = compiledAsapOperator(models[i], o.compiled[i]);
    const std::string fit = models[i].layers.empty() ? "" : " (" + models[i].layers.front().fit + ")";
    specs.push_back({"ASAP-0" + fit, asap + ",variant=asap0", &models[i]});
    specs.push_back({"ASAP" + fit, asap, &models[i]});
  }
  baselines.push_back(std::make_unique<ZeroBetaModel>(first));
  specs.push_back({"beta=0 ASAP-0", compiledAsapOperator(first, baselines.back()->dir) + ",variant=asap0"});
  specs.push_back({"beta=0 ASAP", compiledAsapOperator(first, baselines.back()->dir)});
  const size_t teacherRow = specs.size();
  specs.push_back({"teacher", result.teacher});

  const auto& registry = OperatorRegistry::builtin();
  // Per row and layer, the operator with the layer it replaces (asap:compiled reads that layer).
  std::vector<std::map<int, OperatorSpec>> swaps(specs.size());
  std::vector<std::map<int, std::unique_ptr<Operator>>> operators(specs.size());
  for (size_t r = 0; r < specs.size(); ++r) {
    result.rows.push_back({specs[r].name, specs[r].op, {}, {}, 0, 0});
    for (int l : result.layers) {
      OperatorSpec spec = registry.parse(specs[r].op);
      if (spec.params.count("layer")) spec.params["layer"] = ParamValue((long long)l);
      operators[r][l] = registry.create(spec);
      swaps[r][l] = spec;
      result.rows[r].layers.push_back({});
      result.rows[r].layers.back().layer = l;
    }
  }

  const FashionMnistSplit split = loadFashionMnist(o.split);
  result.images = o.limit > 0 ? std::min(o.limit, split.count) : split.count;
  const size_t pixels = size_t(FashionMnistSplit::kRows) * FashionMnistSplit::kCols;
  Feedback modelRun(feedback, {});
  int teacherCorrect = 0;
  std::vector<int> correct(specs.size(), 0), agreeing(specs.size(), 0);
  for (int i = 0; i < result.images; ++i) {
    feedback.throwIfCanceled();
    const int label = split.labels[size_t(i)];
    const ModelImage image = modelImageFromGrey(split.images.data() + size_t(i) * pixels, config, "", label);
    const VitTrace base = runner.run(image.pixels, modelRun);
    teacherCorrect += base.predicted() == label;
    for (size_t li = 0; li < result.layers.size(); ++li) {
      const int l = result.layers[li];
      for (const VitHeadTrace& head : base.layers[size_t(l)].heads) {
        // Every row times the same call, side by side (wall time of the operator on one head).
        auto timed = [&](size_t r, double& seconds) {
          const auto start = std::chrono::steady_clock::now();
          PlanResult<double> run = operators[r][l]->run(head.input, modelRun);
          seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
          return run;
        };
        double teacherSeconds = 0;
        const PlanResult<double> teacher = timed(teacherRow, teacherSeconds);
        for (size_t r = 0; r < specs.size(); ++r) {
          double seconds = teacherSeconds;
          const PlanResult<double> run = r == teacherRow ? teacher : timed(r, seconds);
          accumulate(result.rows[r].layers[li], run, teacher.plan.dense(), *teacher.output, seconds);
        }
      }
    }
    for (size_t r = 0; r < specs.size(); ++r) {
      const int predicted =
          r == teacherRow ? base.predicted() : runner.rerun(base, result.layers.front(), swaps[r], modelRun).predicted();
      correct[r] += predicted == label;
      agreeing[r] += predicted == base.predicted();
    }
    feedback.setProgress(double(i + 1) / result.images,
                         "image " + std::to_string(i + 1) + "/" + std::to_string(result.images));
  }

  result.teacherModelAccuracy = double(teacherCorrect) / result.images;
  const double heads = double(config.numHeads), N = double(result.images);
  for (size_t r = 0; r < specs.size(); ++r) {
    FrozenLayerRow& row = result.rows[r];
    row.accuracy = double(correct[r]) / N;
    row.agreement = double(agreeing[r]) / N;
    for (size_t li = 0; li < row.layers.size(); ++li) {
      FrozenLayerMetrics& m = row.layers[li];
      m.ms /= N;
      for (double* mean : {&m.outputRmse, &m.attentionError, &m.rowMean, &m.colMean}) *mean /= N * heads;
      row.overall.ms += m.ms;
      row.overall.outputRmse += m.outputRmse / double(row.layers.size());
      row.overall.attentionError += m.attentionError / double(row.layers.size());
      row.overall.rowMean += m.rowMean / double(row.layers.size());
      row.overall.colMean += m.colMean / double(row.layers.size());
      row.overall.rowMax = std::max(row.overall.rowMax, m.rowMax);
      row.overall.colMax = std::max(row.overall.colMax, m.colMax);
    }
  }
  // Break-even of the fitted ASAP rows against the teacher, per layer (t_fit of that layer, latencies in s).
  for (size_t r = 0; r < specs.size(); ++r) {
    if (!specs[r].compiled) continue;
    for (size_t li = 0; li < result.layers.size(); ++li) {
      const double saved = (result.rows[teacherRow].layers[li].ms - result.rows[r].layers[li].ms) / 1e3;
      if (saved <= 0) continue;  // never
      const double fit = specs[r].compiled->at(result.layers[li]).fitSeconds;
      result.rows[r].layers[li].breakEven = (long long)std::ceil(fit / saved);
    }
  }
  return result;
}

}  // namespace tl
