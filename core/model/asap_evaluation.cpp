// The frozen-layer replacement table (docs/operators/asap.md#frozen-layer-evaluation). No LibTorch here.
#include "model/asap_evaluation.h"

#include <atomic>
#include <chrono>
#include <cmath>
#include <exception>
#include <filesystem>
#include <map>
#include <mutex>

#include "analysis/plan_distance.h"
#include "common/errors.h"
#include "common/parallel.h"
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
    c.features = "potentials";  // Φβ = 0 whatever the family: the baselines close the zero dual
    for (auto& l : c.layers) {
      l.beta.setZero();
      l.keyBeta.resize(0);
    }
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

// One head's contribution to its row and layer: sums (divided into means at the end) and maxima.
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

void add(FrozenLayerMetrics& total, const FrozenLayerMetrics& image) {
  for (auto [sum, part] : {std::pair{&total.ms, image.ms}, {&total.outputRmse, image.outputRmse},
                           {&total.attentionError, image.attentionError}, {&total.rowMean, image.rowMean},
                           {&total.colMean, image.colMean}})
    *sum += part;
  total.rowMax = std::max(total.rowMax, image.rowMax);
  total.colMax = std::max(total.colMax, image.colMax);
}

// What one test image contributes: per row and compiled layer its heads' metrics, per row the prediction with
// that row's operator in every compiled layer.
struct ImageEvaluation {
  std::vector<std::vector<FrozenLayerMetrics>> layers;  // [row][compiled layer]
  std::vector<int> predicted;                           // [row]
  int label = 0, teacherPredicted = 0;
};

// The rows' operators per compiled layer, and everything an image's evaluation reads (shared, read-only).
struct EvaluationPlan {
  const VitRunner& runner;
  std::vector<int> layers;
  size_t teacherRow = 0;
  std::vector<std::map<int, OperatorSpec>> swaps;                   // [row]: layer → operator
  std::vector<std::map<int, std::unique_ptr<Operator>>> operators;  // [row]: layer → operator
};

ImageEvaluation evaluateImage(const EvaluationPlan& plan, const FashionMnistSplit& split, int i, Feedback& modelRun) {
  const size_t pixels = size_t(FashionMnistSplit::kRows) * FashionMnistSplit::kCols;
  const size_t rows = plan.operators.size();
  ImageEvaluation e;
  e.label = split.labels[size_t(i)];
  e.layers.assign(rows, std::vector<FrozenLayerMetrics>(plan.layers.size()));
  const ModelImage image = modelImageFromGrey(split.images.data() + size_t(i) * pixels, plan.runner.config(), "", e.label);
  // One teacher forward per image: every row's layer metrics take their inputs from it.
  const VitTrace base = plan.runner.run(image.pixels, modelRun);
  e.teacherPredicted = base.predicted();
  for (size_t li = 0; li < plan.layers.size(); ++li) {
    const int l = plan.layers[li];
    for (const VitHeadTrace& head : base.layers[size_t(l)].heads) {
      // Every row times the same call, side by side (wall time of the operator on one head).
      auto timed = [&](size_t r, double& seconds) {
        const auto start = std::chrono::steady_clock::now();
        PlanResult<double> run = plan.operators[r].at(l)->run(head.input, modelRun);
        seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        return run;
      };
      double teacherSeconds = 0;
      const PlanResult<double> teacher = timed(plan.teacherRow, teacherSeconds);
      for (size_t r = 0; r < rows; ++r) {
        double seconds = teacherSeconds;
        const PlanResult<double> run = r == plan.teacherRow ? teacher : timed(r, seconds);
        accumulate(e.layers[r][li], run, teacher.plan.dense(), *teacher.output, seconds);
      }
    }
  }
  for (size_t r = 0; r < rows; ++r)
    e.predicted.push_back(r == plan.teacherRow ? base.predicted()
                                               : plan.runner.rerun(base, plan.layers.front(), plan.swaps[r], modelRun).predicted());
  return e;
}

// Images split across the cores (parallelFor); each image's operators run on one thread. Returns the images'
// evaluations in image order, so the table does not depend on the thread count (only the timings do).
std::vector<ImageEvaluation> evaluateImages(const EvaluationPlan& plan, const FashionMnistSplit& split, int images,
                                            Feedback& feedback) {
  std::vector<ImageEvaluation> evaluations(static_cast<size_t>(images));
  Feedback modelRun(feedback, {});
  std::atomic<int> done{0};
  std::mutex failureMutex;
  std::exception_ptr failure;
  // An exception cannot leave the parallel region: the first one stops every range and is rethrown after it.
  parallelFor(images, 1e12, [&](Eigen::Index begin, Eigen::Index end) {
    for (Eigen::Index i = begin; i < end; ++i) {
      try {
        if (modelRun.isCanceled()) return;
        evaluations[size_t(i)] = evaluateImage(plan, split, int(i), modelRun);
      } catch (...) {
        std::lock_guard<std::mutex> lock(failureMutex);
        if (!failure) failure = std::current_exception();
        modelRun.cancel();
        return;
      }
      const int finished = ++done;
      feedback.setProgress(double(finished) / images, "image " + std::to_string(finished) + "/" + std::to_string(images));
    }
  });
  if (failure) std::rethrow_exception(failure);
  feedback.throwIfCanceled();
  return evaluations;
}

// The row label of compiled model i: its fit kind and, unless the sliced potentials, its feature family ("ls",
// "ls, raw"); with L when another model has the same kind ("ls, L=16", a slice-count ablation); with its folder
// when that is not enough either.
std::string modelLabel(const std::vector<CompiledAsap>& models, const std::vector<std::string>& dirs, size_t i) {
  auto fitOf = [&](size_t k) {
    const std::string fit = models[k].layers.empty() ? std::string() : models[k].layers.front().fit;
    return models[k].features == "potentials" ? fit : fit + ", " + models[k].features;
  };
  auto slicesOf = [&](size_t k) { return models[k].layers.empty() ? 0L : long(models[k].layers.front().slices.rows()); };
  bool sameFit = false, sameFitAndL = false;
  for (size_t k = 0; k < models.size(); ++k) {
    if (k == i || fitOf(k) != fitOf(i)) continue;
    sameFit = true;
    sameFitAndL = sameFitAndL || slicesOf(k) == slicesOf(i);
  }
  if (!sameFit) return fitOf(i);
  if (!sameFitAndL) return fitOf(i) + ", L=" + std::to_string(slicesOf(i));
  return fitOf(i) + ", " + dirs[i];
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
    const std::string fit = " (" + modelLabel(models, o.compiled, i) + ")";
    // predict-both has no closure, so no ASAP-0 / ASAP pair: its one plan is P(f̂, ĝ).
    if (models[i].features != "predict-both") specs.push_back({"ASAP-0" + fit, asap + ",variant=asap0", &models[i]});
    specs.push_back({"ASAP" + fit, asap, &models[i]});
  }
  baselines.push_back(std::make_unique<ZeroBetaModel>(first));
  specs.push_back({"beta=0 ASAP-0", compiledAsapOperator(first, baselines.back()->dir) + ",variant=asap0"});
  specs.push_back({"beta=0 ASAP", compiledAsapOperator(first, baselines.back()->dir)});
  const size_t teacherRow = specs.size();
  specs.push_back({"teacher", result.teacher});

  const auto& registry = OperatorRegistry::builtin();
  EvaluationPlan plan{runner, result.layers, teacherRow, std::vector<std::map<int, OperatorSpec>>(specs.size()), {}};
  plan.operators.resize(specs.size());
  for (size_t r = 0; r < specs.size(); ++r) {
    result.rows.push_back({specs[r].name, specs[r].op, {}, {}, 0, 0});
    for (int l : result.layers) {
      // asap:compiled reads the layer it replaces.
      OperatorSpec spec = registry.parse(specs[r].op);
      if (spec.params.count("layer")) spec.params["layer"] = ParamValue((long long)l);
      plan.operators[r][l] = registry.create(spec);
      plan.swaps[r][l] = spec;
      result.rows[r].layers.push_back({});
      result.rows[r].layers.back().layer = l;
    }
  }

  const FashionMnistSplit split = loadFashionMnist(o.split);
  result.images = o.limit > 0 ? std::min(o.limit, split.count) : split.count;
  int teacherCorrect = 0;
  std::vector<int> correct(specs.size(), 0), agreeing(specs.size(), 0);
  for (const ImageEvaluation& e : evaluateImages(plan, split, result.images, feedback)) {
    teacherCorrect += e.teacherPredicted == e.label;
    for (size_t r = 0; r < specs.size(); ++r) {
      for (size_t li = 0; li < result.layers.size(); ++li) add(result.rows[r].layers[li], e.layers[r][li]);
      correct[r] += e.predicted[r] == e.label;
      agreeing[r] += e.predicted[r] == e.teacherPredicted;
    }
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
  // Break-even of the fitted ASAP rows against the teacher, per layer (t_fit of that layer, latencies in s), and
  // the fit's R².
  for (size_t r = 0; r < specs.size(); ++r) {
    if (!specs[r].compiled) continue;
    double r2 = 0;
    for (size_t li = 0; li < result.layers.size(); ++li) {
      result.rows[r].layers[li].fitR2 = specs[r].compiled->at(result.layers[li]).r2;
      r2 += *result.rows[r].layers[li].fitR2 / double(result.layers.size());
      const double saved = (result.rows[teacherRow].layers[li].ms - result.rows[r].layers[li].ms) / 1e3;
      if (saved <= 0) continue;  // never
      const double fit = specs[r].compiled->at(result.layers[li]).fitSeconds;
      result.rows[r].layers[li].breakEven = (long long)std::ceil(fit / saved);
    }
    result.rows[r].overall.fitR2 = r2;
  }
  return result;
}

}  // namespace tl
