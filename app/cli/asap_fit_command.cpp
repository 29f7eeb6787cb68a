// `tlens asap-fit`: fits the coefficients β of a compiled ASAP layer to Sinkhorn teacher duals the user
// already has (docs/cli.md#asap-fit, the math in docs/operators/asap.md#fitting), and writes beta.npy and
// fit.json; `tlens plan --op "asap:slices=TH.npy,beta=DIR/beta.npy"` then runs the compiled layer.
#include <cmath>
#include <cstdio>
#include <iostream>

#include <nlohmann/json.hpp>

#include "arguments.h"
#include "commands.h"
#include "common/errors.h"
#include "io/atomic_file.h"
#include "io/npy.h"
#include "ops/asap/asap.h"
#include "ops/asap/asap_fit.h"
#include "ops/mask_mode.h"
#include "ops/slicers.h"
#include "terminal_progress.h"

namespace tl::cli {
namespace {

CommandLine asapFitCommandLine() {
  return CommandLine(
      "asap-fit",
      "Fit β of a compiled ASAP layer (one β shared by every head instance) to a Sinkhorn teacher's source duals; "
      "writes DIR/beta.npy and DIR/fit.json. Ctrl-C cancels (nothing is written).",
      {{"q", "Q.npy", "queries, [N, n, d] (N head instances, unscaled, as `tlens extract` writes them)"},
       {"k", "K.npy", "keys, [N, n, d]"},
       {"dual", "U.npy", "the teacher's closure-ready source duals, [N, n], score coordinates: the u.npy of "
                         "`tlens plan --op sinkhorn:T=...` (even T), or of a T−2 run for a row-ending teacher"},
       {"mask", "M.npy", "valid tokens, [N, n] (1 valid, 0 padding); optional"},
       {"mask-mode", "MODE", "subsequence (default) or keep-queries, as the teacher ran"},
       {"slices", "TH.npy", "slice bank Θ, [L, d] (e.g. from --make-slices); rows used as given"},
       {"make-slices", "L", "instead of --slices: draw L uniform directions from --seed and write DIR/slices.npy"},
       {"seed", "S", "seed of --make-slices (default 0)"},
       {"fit", "ls|kl", "least squares (default) or KL (Newton from the LS solution)"},
       {"features", "FAMILY", "potentials (default), raw, rank-displacement or predict-both (also fits β_g of the key "
                              "dual; writes DIR/key_beta.npy; LS only)"},
       {"lambda-b", "X", "ridge on the normalised risk, λ_B ≥ 0 (default 1e-4; KL needs > 0)"},
       {"eps", "X", "the teacher's eps (default 1)"},
       {"closing", "column|row", "the teacher's last step: column (even T, default) or row (odd T)"},
       {"out", "DIR", "output folder (created if missing)"}});
}

nlohmann::json fitJson(const LayerFit& fit, const FitSetErrors& errors, const FitSettings& settings, size_t N,
                       Eigen::Index L, Eigen::Index d, const std::string& closing, const std::string& slicesPath) {
  nlohmann::json j;
  j["fit"] = fitKindName(fit.kind);
  j["features"] = asapFeaturesName(settings.features);
  j["instances"] = N;
  j["L"] = L;
  j["d"] = d;
  j["rows"] = fit.ls.rows;
  j["eps"] = settings.eps;
  j["closing"] = closing;
  j["mask_mode"] = maskModeName(settings.maskMode);
  j["slices"] = slicesPath;
  j["lambda_b"] = fit.ls.lambdaB;
  j["lambda"] = fit.ls.lambda;  // n_rows·λ_B: the ridge of the stacked solve
  j["solver"] = fit.kind == FitKind::Kl ? fit.kl->method : fit.ls.solver;
  j["r2"] = fit.quality.r2;
  j["delta"] = fit.quality.delta;
  j["plan_ratio_band"] = std::exp(2 * fit.quality.delta / settings.eps);
  if (fit.kind == FitKind::Kl) {
    j["objective"] = fit.kl->objective;
    j["iterations"] = fit.kl->iterations;
    j["gradient_norm"] = fit.kl->gradientNorm;
    j["converged"] = fit.kl->converged;
  } else {
    j["objective"] = fit.quality.residualMeanSquare + fit.ls.lambdaB * fit.beta.squaredNorm();
    j["iterations"] = 0;  // a direct solve
  }
  if (fit.keyQuality) {  // predict-both: the key side's fit; its plan has one error (asap0 = asap)
    j["key_r2"] = fit.keyQuality->r2;
    j["key_delta"] = fit.keyQuality->delta;
  }
  j["seconds"] = fit.seconds;
  j["fit_set_relative_error"] = {{"asap0", errors.asap0},
                                 {"asap", errors.asap},
                                 {"beta0_asap0", errors.baselineAsap0},
                                 {"beta0_asap", errors.baselineAsap}};
  return j;
}

int asapFit(const CommandLine& cl) {
  const std::string out = cl.required("out");
  FitSettings settings;
  if (const auto v = cl.get("eps")) settings.eps = parseReal("eps", *v);
  if (!(settings.eps > 0)) throw InvalidArgument("--eps must be > 0");
  if (const auto v = cl.get("mask-mode")) settings.maskMode = parseMaskMode(*v);
  if (const auto v = cl.get("features")) settings.features = parseAsapFeatures(*v);
  const FitKind kind = parseFitKind(cl.get("fit").value_or("ls"));
  const double lambdaB = cl.has("lambda-b") ? parseReal("lambda-b", *cl.get("lambda-b")) : 1e-4;
  const std::string closingText = cl.get("closing").value_or("column");
  const bool rowEnding = parseClosing(closingText) == Closing::Row;
  if (cl.has("slices") == cl.has("make-slices"))
    throw InvalidArgument("give exactly one of --slices TH.npy or --make-slices L");

  const auto instances = readFitInstances(cl.required("q"), cl.required("k"), cl.required("dual"), cl.get("mask"));
  const int d = int(instances.front().Q.cols());
  std::string slicesPath;
  MatD slices;
  if (const auto path = cl.get("slices")) {
    slices = readSliceFile(*path);
    slicesPath = *path;
  } else {
    const int L = parsePositiveInt("make-slices", *cl.get("make-slices"));
    const uint64_t seed = cl.has("seed") ? parseUnsigned("seed", *cl.get("seed")) : 0;
    slices = sliceDirections({Slicer::Random, L, seed, {}}, d);
    slicesPath = out + "/slices.npy";
  }

  TerminalProgress progress;
  LayerFit fit;
  FitSetErrors errors;
  {
    InterruptScope interrupts(progress.feedback());
    fit = fitLayer(instances, slices, settings, lambdaB, kind, progress.feedback());
    progress.feedback().setProgress(1.0, "fit-set errors");
    errors = fitSetErrors(instances, slices, fit.beta, settings, rowEnding, fit.keyBeta);
  }
  progress.clearLine();
  ensureDirectory(out);
  if (!cl.has("slices")) writeNpy(slicesPath, slices);
  writeNpy(out + "/beta.npy", fit.beta);
  if (fit.keyQuality) writeNpy(out + "/key_beta.npy", fit.keyBeta);
  const auto json = fitJson(fit, errors, settings, instances.size(), slices.rows(), d, closingText, slicesPath);
  writeFileAtomically(out + "/fit.json", json.dump(1) + "\n");
  std::printf("%s fit (%s) of L = %lld slices on %zu head instances (%lld rows): R² %.4f, δ %.4g, lambda_b %g "
              "(lambda %g); fit-set attention error ASAP %.4g, ASAP-0 %.4g (β = 0: %.4g, %.4g); %s/beta.npy\n",
              fitKindName(kind), asapFeaturesName(settings.features), static_cast<long long>(slices.rows()), instances.size(),
              static_cast<long long>(fit.ls.rows), fit.quality.r2, fit.quality.delta, fit.ls.lambdaB, fit.ls.lambda,
              errors.asap, errors.asap0, errors.baselineAsap, errors.baselineAsap0, out.c_str());
  if (fit.keyQuality)
    std::printf("key dual ĝ (predict-both, no closure: the attention error above is P(f̂, ĝ)'s): R² %.4f, δ %.4g; "
                "%s/key_beta.npy\n",
                fit.keyQuality->r2, fit.keyQuality->delta, out.c_str());
  return 0;
}

}  // namespace

int asapFitCommand(const Args& args) {
  CommandLine cl = asapFitCommandLine();
  cl.parse(args);
  if (cl.helpRequested()) {
    std::cout << cl.usage();
    return 0;
  }
  return asapFit(cl);
}

}  // namespace tl::cli
