#pragma once
// Cases, CPU references and comparisons shared by the CUDA tests: the kernel tests on a GPU
// (tl_core_cuda_kernel_tests) and the CPU simulation of the same kernels (tl_core_cuda_math_tests).
//
// The reference is the CPU loop itself (core/ops/sinkhorn/sinkhorn_loop.h over DenseScores, exactly what
// sinkhornAttention runs on its inputs) in float64 and in float32. The device result is compared with the
// float64 run, and its tolerance scales with the float32 run's own error on the same case (FlashAttention's
// test idea): err_device ≤ kRatio · err_f32 + floor, floor = kFloorUlps · FLT_EPSILON · max(1, max|ref|).
// The floor's magnitude depends on the field: duals and histories max(1, max|ref|) (score units); plan, output
// and display tiles max|ref| (an error relative to the largest entry); marginal errors max(1, max|ref|) too: an
// error is a difference of sums of at least its own size (column targets are n_q/n_k, not 1, on rectangles), so
// its float32 rounding is on that scale.
// Every case prints one line starting "TLCUDA " with each field's ratio err_device / max(err_f32, floor), so
// a GPU run's ratios can be read off its log (and the worst per field at the end).
#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <iomanip>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "common/feedback.h"
#include "cuda/attention_problem.h"
#include "cuda/tf32_tile.h"
#include "cuda/tile_index.h"
#include "io/checkpoint/half_float.h"
#include "ops/plan_result.h"
#include "ops/score_geometry.h"
#include "ops/sinkhorn/sinkhorn_loop.h"
#include "support/test_util.h"

namespace tl::cuda::test {

constexpr double kRatio = 4.0;       // device error may be this many times the CPU float32 error
constexpr double kFloorUlps = 32.0;  // plus this many float32 epsilons of the reference's magnitude

// Which tokens are inactive (log marginal −inf). Keys: every third key from the second (the keep-queries
// convention: padded keys carry no mass, queries keep μ = 1/n_q). Queries: also every fourth query from the
// third (rows the kernels must leave at zero).
enum class Inactive { None, Keys, KeysAndQueries };

struct CaseSpec {
  int batch = 2, nq = 7, nk = 7, d = 16, dv = 5;
  int T = 3;
  double eps = 1.0;
  Inactive inactive = Inactive::None;
  ElementType type = ElementType::F32;
  double qScale = 1.0;  // larger queries give larger scores
  uint64_t seed = 1;

  std::string name() const {
    std::ostringstream s;
    s << "b" << batch << "_nq" << nq << "_nk" << nk << "_d" << d << "_dv" << dv << "_T" << T << "_eps" << eps << "_"
      << (inactive == Inactive::None ? "all" : inactive == Inactive::Keys ? "keys" : "keysqueries") << "_"
      << elementName(type) << (qScale != 1.0 ? "_q" + std::to_string(int(qScale)) : "") << "_s" << seed;
    std::string name = s.str();  // letters, digits and '_' only: usable as a GoogleTest parameter name
    for (char& ch : name)
      if (ch == '.') ch = 'p';
    return name;
  }
};

// GoogleTest prints a parameter by its name, not its bytes.
inline void PrintTo(const CaseSpec& c, std::ostream* os) { *os << c.name(); }

inline bool keyInactive(const CaseSpec& c, int j) { return c.inactive != Inactive::None && j % 3 == 1; }
inline bool queryInactive(const CaseSpec& c, int i) { return c.inactive == Inactive::KeysAndQueries && i % 4 == 2; }

// Host data of a case: values as the device sees them (rounded to the element type), the exact log marginals.
struct CaseData {
  CaseSpec spec;
  std::vector<float> q, k, v;           // [batch][n][d]: the values after rounding to the element type
  std::vector<uint16_t> q16, k16, v16;  // their f16/bf16 bits when the element type is 16-bit
  std::vector<double> logMu, logNu;
  double scale = 1;

  AttentionProblem problem() const {
    AttentionProblem p;
    p.batch = spec.batch;
    p.nq = spec.nq;
    p.nk = spec.nk;
    p.d = spec.d;
    p.dv = spec.dv;
    p.type = spec.type;
    const bool wide = spec.type == ElementType::F32;
    p.q = wide ? static_cast<const void*>(q.data()) : q16.data();
    p.k = wide ? static_cast<const void*>(k.data()) : k16.data();
    p.v = spec.dv == 0 ? nullptr : wide ? static_cast<const void*>(v.data()) : v16.data();
    p.logMu.assign(logMu.begin(), logMu.end());
    p.logNu.assign(logNu.begin(), logNu.end());
    p.scale = float(scale);
    return p;
  }
};

inline void fillValues(const CaseSpec& c, int rows, int cols, uint64_t seed, double scale, std::vector<float>& values,
                       std::vector<uint16_t>& bits) {
  values.clear();
  bits.clear();
  for (int b = 0; b < c.batch; ++b) {
    const MatD m = tl::test::gaussian(rows, cols, seed + 7919ull * uint64_t(b), scale);
    for (int i = 0; i < rows; ++i)
      for (int j = 0; j < cols; ++j) {
        const float x = float(m(i, j));
        if (c.type == ElementType::F16) {
          bits.push_back(floatToHalf(x));
          values.push_back(halfToFloat(bits.back()));
        } else if (c.type == ElementType::BF16) {
          bits.push_back(floatToBfloat16(x));
          values.push_back(bfloat16ToFloat(bits.back()));
        } else {
          values.push_back(x);
        }
      }
  }
}

inline CaseData makeCase(const CaseSpec& c) {
  CaseData data;
  data.spec = c;
  fillValues(c, c.nq, c.d, c.seed, c.qScale, data.q, data.q16);
  fillValues(c, c.nk, c.d, c.seed + 1000, 1.0, data.k, data.k16);
  if (c.dv) fillValues(c, c.nk, c.dv, c.seed + 2000, 1.0, data.v, data.v16);
  const double inf = std::numeric_limits<double>::infinity();
  for (int i = 0; i < c.nq; ++i) data.logMu.push_back(queryInactive(c, i) ? -inf : -std::log(double(c.nq)));
  for (int j = 0; j < c.nk; ++j) data.logNu.push_back(keyInactive(c, j) ? -inf : -std::log(double(c.nk)));
  data.scale = c.nq;
  return data;
}

template <class T>
Mat<T> headMatrix(const std::vector<float>& values, int head, int rows, int cols) {
  Mat<T> m(rows, cols);
  const size_t base = size_t(head) * rows * cols;
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < cols; ++j) m(i, j) = T(values[base + size_t(i) * cols + j]);
  return m;
}

// The CPU reference on one head, in precision T: sinkhornLogDomain's steps on the case's marginals.
// Softmax is T = 1, eps = 1 (core/ops/softmax.cpp).
template <class T>
PlanResult<T> referenceHead(const CaseData& data, int head, int budget, double eps) {
  const CaseSpec& c = data.spec;
  const DenseScores<T> X(headMatrix<T>(data.q, head, c.nq, c.d), headMatrix<T>(data.k, head, c.nk, c.d), T(eps));
  Vec<T> logMu(c.nq), logNu(c.nk);
  // float32: the float log marginals the device gets; float64: the exact ones.
  for (int i = 0; i < c.nq; ++i) logMu(i) = std::is_same_v<T, float> ? T(float(data.logMu[size_t(i)])) : T(data.logMu[size_t(i)]);
  for (int j = 0; j < c.nk; ++j) logNu(j) = std::is_same_v<T, float> ? T(float(data.logNu[size_t(j)])) : T(data.logNu[size_t(j)]);
  PlanResult<T> r;
  Vec<T> ut, vt;
  SinkhornLoopOptions options;
  options.budget = budget;
  runSinkhornLoop<T>(X, logMu, logNu, T(eps), T(data.scale), options, noFeedback(), r, ut, vt);
  r.plan = X.plan(ut, vt, T(data.scale));
  if (c.dv) r.output = r.plan.apply(headMatrix<T>(data.v, head, c.nk, c.dv));
  return r;
}

// Block mean and max of a plan on the display grid (tile_index.h), in double.
inline void poolPlan(const MatD& plan, int rows, int cols, std::vector<double>& mean, std::vector<double>& max) {
  const long long nq = plan.rows(), nk = plan.cols();
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) {
      double sum = 0, m = 0;
      const long long i0 = blockStart(r, nq, rows), i1 = blockStart(r + 1, nq, rows);
      const long long j0 = blockStart(c, nk, cols), j1 = blockStart(c + 1, nk, cols);
      for (long long i = i0; i < i1; ++i)
        for (long long j = j0; j < j1; ++j) {
          sum += plan(i, j);
          m = std::max(m, double(plan(i, j)));
        }
      mean.push_back(sum / double((i1 - i0) * (j1 - j0)));
      max.push_back(m);
    }
}

// One field of a case (all heads flattened), the device values beside both references.
enum class Scale { Duals, Entries, Errors };
struct Field {
  explicit Field(std::string name_, Scale scale_ = Scale::Duals) : name(std::move(name_)), scale(scale_) {}
  std::string name;
  Scale scale;
  std::vector<double> device, ref64, ref32;
  double extra = 0;  // added to the tolerance: the TF32 checks' error bounds (0 for float32 runs)
};

// Worst ratio per summary name over the whole run, and the limit it was checked against, printed at the end.
struct WorstRatio {
  double ratio = 0, limit = kRatio;
};
inline std::map<std::string, WorstRatio>& worstRatios() {
  static std::map<std::string, WorstRatio> worst;
  return worst;
}

// Device values against the float64 reference with the tolerance
//   limit · err_f32 + floor + f.extra,   floor = kFloorUlps · FLT_EPSILON · magnitude,
// err_f32 the float32 reference's own error. −inf must match exactly (inactive tokens); NaN or an infinity
// where the reference is finite fails. `ratio` receives err_device / max(err_f32 + extra/limit, floor) when
// `ofTolerance` is false (≤ about `limit` when the check passes; float32 runs have extra = 0) and
// err_device / tolerance when it is true (≤ 1 passes). The worst ratio is kept under `summary`.
[[nodiscard]] inline ::testing::AssertionResult checkField(const Field& f, double limit, bool ofTolerance,
                                                           const std::string& summary, double& ratio) {
  ratio = 0;
  if (f.device.size() != f.ref64.size() || f.ref32.size() != f.ref64.size())
    return ::testing::AssertionFailure() << f.name << ": " << f.device.size() << " device values, " << f.ref64.size()
                                         << " reference values";
  double errDevice = 0, errF32 = 0, magnitude = f.scale == Scale::Entries ? 0.0 : 1.0;
  size_t worstAt = 0;
  for (size_t i = 0; i < f.ref64.size(); ++i) {
    const double x = f.device[i], r = f.ref64[i], r32 = f.ref32[i];
    if (std::isinf(r) && r < 0) {
      if (!(std::isinf(x) && x < 0))
        return ::testing::AssertionFailure() << f.name << "[" << i << "] = " << x << " but the reference is -inf";
      continue;
    }
    if (!std::isfinite(x))
      return ::testing::AssertionFailure() << f.name << "[" << i << "] = " << x << " but the reference is " << r;
    magnitude = std::max(magnitude, std::abs(r));
    if (std::isfinite(r32)) errF32 = std::max(errF32, std::abs(r32 - r));
    if (std::abs(x - r) > errDevice) {
      errDevice = std::abs(x - r);
      worstAt = i;
    }
  }
  const double floor = kFloorUlps * FLT_EPSILON * magnitude + 1e-30;
  const double tol = limit * errF32 + floor + f.extra;
  ratio = ofTolerance ? errDevice / tol : errDevice / std::max(errF32 + f.extra / limit, floor);
  WorstRatio& worst = worstRatios()[summary];
  worst.ratio = std::max(worst.ratio, ratio);
  worst.limit = ofTolerance ? 1.0 : limit;
  if (errDevice > tol)
    return ::testing::AssertionFailure() << summary << ": max |device − f64| = " << errDevice << " at " << worstAt
                                         << " (device " << f.device[worstAt] << ", f64 " << f.ref64[worstAt]
                                         << ") > tol " << tol << " (f32 error " << errF32 << ", floor " << floor
                                         << ", bound " << f.extra << ")";
  return ::testing::AssertionSuccess();
}

// The float32 runs' check: limit kRatio, nothing added.
[[nodiscard]] inline ::testing::AssertionResult withinF32Error(const Field& f, double& ratio) {
  return checkField(f, kRatio, false, f.name, ratio);
}

// Checks every field and prints one line "TLCUDA case=<name> <prefix><field>=<ratio> ...".
[[nodiscard]] inline ::testing::AssertionResult checkFields(const std::vector<Field>& fields, const std::string& caseName,
                                                            double limit, bool ofTolerance, const std::string& prefix,
                                                            const std::string& lineStart = "") {
  bool ok = true;
  std::ostringstream failures, line;
  line << "TLCUDA case=" << caseName << lineStart;
  for (const Field& f : fields) {
    double ratio = 0;
    const ::testing::AssertionResult one = checkField(f, limit, ofTolerance, prefix + f.name, ratio);
    line << " " << prefix << f.name << "=" << std::setprecision(3) << ratio;
    if (!one) {
      ok = false;
      line << "(FAIL)";
      failures << "\n  " << one.message();
    }
  }
  std::printf("%s\n", line.str().c_str());
  if (!ok) return ::testing::AssertionFailure() << caseName << ":" << failures.str();
  return ::testing::AssertionSuccess();
}

inline void appendVec(std::vector<double>& out, const Vec<double>& v) { out.insert(out.end(), v.data(), v.data() + v.size()); }
inline void appendVec(std::vector<double>& out, const Vec<float>& v) {
  for (Eigen::Index i = 0; i < v.size(); ++i) out.push_back(v(i));
}
template <class T>
void appendMat(std::vector<double>& out, const Mat<T>& m) {
  for (Eigen::Index i = 0; i < m.rows(); ++i)
    for (Eigen::Index j = 0; j < m.cols(); ++j) out.push_back(double(m(i, j)));
}
inline std::vector<double> widen(const std::vector<float>& v) { return std::vector<double>(v.begin(), v.end()); }

// The fields of a run (everything the device returned, as far as it was asked for: u, v, their histories,
// the error history, O, the plan, the display tiles) beside the CPU loop (float64 and float32) on `ref`, head by
// head, with two magnitudes the TF32 bounds need. `ref` is the case's data (or, for TF32 runs, its inputs
// rounded to TF32); `budget`/`eps`: the run's (softmax: 1, 1).
struct CaseFields {
  std::vector<Field> fields;
  double outputWeight = 0;  // max over rows i and output columns c of Σ_j A_ij·|V_jc| (float64 plan)
  double maxTarget = 0;     // largest attention-scale marginal target
};

inline CaseFields caseFields(const CaseData& ref, const CudaAttentionResult& got, const CudaOptions& asked, int budget,
                             double eps) {
  const CaseSpec& c = ref.spec;
  CaseFields out;
  std::vector<Field>& fields = out.fields;
  fields = {Field("u"), Field("v")};
  Field uHist("uHistory"), vHist("vHistory");
  Field output("output", Scale::Entries), plan("plan", Scale::Entries);
  Field tMean("tileMean", Scale::Entries), tMax("tileMax", Scale::Entries);
  Field err[4] = {Field("rowMaxErr", Scale::Errors), Field("rowMeanErr", Scale::Errors),
                  Field("colMaxErr", Scale::Errors), Field("colMeanErr", Scale::Errors)};
  for (double lm : ref.logMu) out.maxTarget = std::max(out.maxTarget, ref.scale * std::exp(lm));
  for (double ln : ref.logNu) out.maxTarget = std::max(out.maxTarget, ref.scale * std::exp(ln));
  for (int h = 0; h < c.batch; ++h) {
    const PlanResult<double> r64 = referenceHead<double>(ref, h, budget, eps);
    const PlanResult<float> r32 = referenceHead<float>(ref, h, budget, eps);
    appendVec(fields[0].ref64, r64.u);
    appendVec(fields[0].ref32, r32.u);
    appendVec(fields[1].ref64, r64.v);
    appendVec(fields[1].ref32, r32.v);
    if (asked.histories) {
      appendMat(uHist.ref64, r64.uHistory);
      appendMat(uHist.ref32, r32.uHistory);
      appendMat(vHist.ref64, r64.vHistory);
      appendMat(vHist.ref32, r32.vHistory);
    }
    if (asked.errors)
      for (int t = 0; t < budget; ++t) {
        const MarginalErrors& e64 = r64.errorHistory[size_t(t)];
        const MarginalErrors& e32 = r32.errorHistory[size_t(t)];
        err[0].ref64.push_back(e64.rowMax), err[0].ref32.push_back(e32.rowMax);
        err[1].ref64.push_back(e64.rowMean), err[1].ref32.push_back(e32.rowMean);
        err[2].ref64.push_back(e64.colMax), err[2].ref32.push_back(e32.colMax);
        err[3].ref64.push_back(e64.colMean), err[3].ref32.push_back(e32.colMean);
      }
    if (c.dv) {
      appendMat(output.ref64, *r64.output);
      appendMat(output.ref32, *r32.output);
      const MatD weight = r64.plan.dense() * headMatrix<double>(ref.v, h, c.nk, c.dv).cwiseAbs();
      out.outputWeight = std::max(out.outputWeight, weight.maxCoeff());
    }
    if (asked.plan) {
      appendMat(plan.ref64, r64.plan.dense());
      appendMat(plan.ref32, r32.plan.dense());
    }
    if (asked.tileRows) {
      const int rows = int(displayBlocks(c.nq, asked.tileRows)), cols = int(displayBlocks(c.nk, asked.tileCols));
      poolPlan(r64.plan.dense(), rows, cols, tMean.ref64, tMax.ref64);
      poolPlan(r32.plan.dense().cast<double>(), rows, cols, tMean.ref32, tMax.ref32);
    }
  }
  fields[0].device = widen(got.u);
  fields[1].device = widen(got.v);
  if (asked.histories) {
    uHist.device = widen(got.uHistory);
    vHist.device = widen(got.vHistory);
    fields.push_back(uHist);
    fields.push_back(vHist);
  }
  if (asked.errors) {
    for (const StepErrors& e : got.errorHistory) {
      err[0].device.push_back(e.rowMax);
      err[1].device.push_back(e.rowMean);
      err[2].device.push_back(e.colMax);
      err[3].device.push_back(e.colMean);
    }
    for (const Field& f : err) fields.push_back(f);
  }
  if (c.dv) {
    output.device = widen(got.output);
    fields.push_back(output);
  }
  if (asked.plan) {
    plan.device = widen(got.plan);
    fields.push_back(plan);
  }
  if (asked.tileRows) {
    tMean.device = widen(got.tiles.mean);
    tMax.device = widen(got.tiles.max);
    fields.push_back(tMean);
    fields.push_back(tMax);
  }
  return out;
}

// A float32 run against the CPU loop: every field within kRatio times the float32 reference's own error.
[[nodiscard]] inline ::testing::AssertionResult matchesCpu(const CaseData& data, const CudaAttentionResult& got,
                                                           const CudaOptions& asked, int budget, double eps,
                                                           const std::string& caseName) {
  return checkFields(caseFields(data, got, asked, budget, eps).fields, caseName, kRatio, false, "");
}

// The plan and output computed from given duals (planFromDualsCuda) against the CPU's DenseScores::plan of the
// same float duals, in float64 and in float32, with withinF32Error's tolerance: the float32 evaluation's own
// error on the same plan sets it, as for every field of matchesCpu. Both references get exactly what the device
// gets: ut = u/eps from the float u (in float for the float32 run, exact for the float64 one). Why not a fixed
// tolerance: A = scale·exp((x + ut) + vt) carries the float32 rounding of its exponent argument, a few ulps of
// |x| + |ut| + |vt| (about 50 at eps = 0.1, so ~1e-5 relative), which a hand-picked absolute 1e-5 did not allow
// for (the first GPU run missed it by 4 % on an entry of 0.914).
[[nodiscard]] inline ::testing::AssertionResult planFromDualsMatchesCpu(const CaseData& data, const std::vector<float>& u,
                                                                        const std::vector<float>& v, double eps,
                                                                        const CudaAttentionResult& got,
                                                                        const std::string& caseName) {
  const CaseSpec& c = data.spec;
  Field plan("plan", Scale::Entries), out("output", Scale::Entries);
  for (int h = 0; h < c.batch; ++h) {
    VecD ut64(c.nq), vt64(c.nk);
    Vec<float> ut32(c.nq), vt32(c.nk);
    for (int i = 0; i < c.nq; ++i) {
      const float ui = u[size_t(h) * c.nq + i];
      ut64(i) = double(ui) / eps;
      ut32(i) = ui / float(eps);
    }
    for (int j = 0; j < c.nk; ++j) {
      const float vj = v[size_t(h) * c.nk + j];
      vt64(j) = double(vj) / eps;
      vt32(j) = vj / float(eps);
    }
    const DenseScores<double> x64(headMatrix<double>(data.q, h, c.nq, c.d), headMatrix<double>(data.k, h, c.nk, c.d), eps);
    const DenseScores<float> x32(headMatrix<float>(data.q, h, c.nq, c.d), headMatrix<float>(data.k, h, c.nk, c.d),
                                 float(eps));
    const MatD p64 = x64.plan(ut64, vt64, data.scale);
    const Mat<float> p32 = x32.plan(ut32, vt32, float(data.scale));
    appendMat(plan.ref64, p64);
    appendMat(plan.ref32, p32);
    if (c.dv) {
      appendMat(out.ref64, MatD(p64 * headMatrix<double>(data.v, h, c.nk, c.dv)));
      appendMat(out.ref32, Mat<float>(p32 * headMatrix<float>(data.v, h, c.nk, c.dv)));
    }
  }
  std::vector<Field> fields;
  plan.device = widen(got.plan);
  fields.push_back(plan);
  if (c.dv) {
    out.device = widen(got.output);
    fields.push_back(out);
  }
  return checkFields(fields, caseName, kRatio, false, "");
}

// ---------------------------------------------------------------------------------------------------------
// TF32 runs (CudaOptions::tf32). q, k, v and the plan tile are rounded to TF32 (unit roundoff u = 2^-11) before
// the tile products, so a TF32 run is held to two checks:
//
// (A) "tf32bound": against the float64 loop on the case's own inputs, with the float32 tolerance plus a worst-case
//     bound of what the rounding can do. Per score, |tf32(q)·tf32(k) − q·k| ≤ (2u + u²)·|q·k| term by term, and
//     the accumulation adds at most d·2^-23 of Σ|terms| (float32 with truncation), so every scaled score
//     x = q·k/(√d·eps) moves by at most
//         δ = (2u + u² + d·2^-23·(1 + u)²) · max_ij Σ_k |q_ik||k_jk| / (√d·eps)      (tf32ScoreBound).
//     A half-step's potential is log-marginal − LSE of (x + other potential), and LSE is 1-Lipschitz in the max
//     norm, so after t half-steps the potentials move by ≤ t·δ, and log A = x + ut + vt by ≤ 2T·δ after T. Bounds
//     added per field: duals and histories T·δ; plan and display tiles max|A|·(e^{2Tδ} − 1); marginal errors
//     (max target + max|error|)·(e^{2Tδ} − 1); output W·(e^{2Tδ} − 1 + (2u + u²)·e^{2Tδ}), W = max_ic Σ_j A_ij|V_jc|
//     (the second term: P and V rounded in P·V). Printed: err_device / tolerance (≤ 1 passes). The bound is a
//     worst case over all n² scores with every rounding aligned; typical errors are far smaller, and at small eps
//     or large |S| the bound (like TF32 itself) gets coarse.
// (B) "tf32inputs": against the float64 and float32 loops on the inputs rounded to TF32 (what the device
//     multiplies), with `limit` times the float32 error, plus (2u + u²)·W for P's rounding on the output. This is
//     the sharp check of the tiles' indexing and of where the rounding happens: what remains is float32-sized
//     accumulation differences, which PTX leaves to the hardware. Tensor cores are reported to align and
//     normalise with truncation at each instruction (d/8 steps), where the CPU's float32 sums round to nearest:
//     biased errors that can add up to about 2·d/8 = 32 times (d = 128) the unbiased float32 error, so the GPU
//     limit is kTf32InputsRatio = 64 (the CPU emulation sums exactly and is held to kRatio). A missing rounding
//     or a wrong fragment index shows up as hundreds to millions. Printed like the float32 runs: err_device /
//     err_f32 (P's allowance included), limit `inputsLimit`; the first GPU run's worst ratios are the numbers to
//     tighten it from.
constexpr double kTf32Unit = 1.0 / 2048.0;  // 2^-11
constexpr double kTf32InputsRatio = 64.0;

// The case with q, k, v rounded to TF32, as the conversion kernels do (for the references of check B).
inline CaseData roundedToTf32(const CaseData& data) {
  CaseData r = data;
  for (std::vector<float>* values : {&r.q, &r.k, &r.v})
    for (float& x : *values) x = toTf32(x);
  return r;
}

// δ above: a bound on how far TF32 moves any scaled score of the case.
inline double tf32ScoreBound(const CaseData& data, double eps) {
  const CaseSpec& c = data.spec;
  const double u = kTf32Unit;
  const double perTerm = 2 * u + u * u + c.d * std::ldexp(1.0, -23) * (1 + u) * (1 + u);
  double maxAbsDot = 0;
  for (int h = 0; h < c.batch; ++h) {
    const MatD q = headMatrix<double>(data.q, h, c.nq, c.d).cwiseAbs(), k = headMatrix<double>(data.k, h, c.nk, c.d).cwiseAbs();
    maxAbsDot = std::max(maxAbsDot, (q * k.transpose()).maxCoeff());
  }
  return perTerm * maxAbsDot / (std::sqrt(double(c.d)) * eps);
}

inline double maxFiniteAbs(const std::vector<double>& x) {
  double m = 0;
  for (double v : x)
    if (std::isfinite(v)) m = std::max(m, std::abs(v));
  return m;
}

// Checks A and B above; prints one line per check ("TLCUDA case=<name> delta=… tf32bound.u=… …" and
// "… tf32inputs.u=… …").
[[nodiscard]] inline ::testing::AssertionResult matchesCpuTf32(const CaseData& data, const CudaAttentionResult& got,
                                                               const CudaOptions& asked, int budget, double eps,
                                                               const std::string& caseName,
                                                               double inputsLimit = kTf32InputsRatio) {
  const double u = kTf32Unit, delta = tf32ScoreBound(data, eps), growth = std::expm1(2.0 * budget * delta);
  CaseFields a = caseFields(data, got, asked, budget, eps);
  for (Field& f : a.fields) {
    const double magnitude = maxFiniteAbs(f.ref64);
    if (f.scale == Scale::Duals)
      f.extra = budget * delta;
    else if (f.name == "output")
      f.extra = a.outputWeight * (growth + (2 * u + u * u) * (1 + growth));
    else if (f.scale == Scale::Entries)
      f.extra = magnitude * growth;
    else
      f.extra = (a.maxTarget + magnitude) * growth;
  }
  CaseFields b = caseFields(roundedToTf32(data), got, asked, budget, eps);
  for (Field& f : b.fields)
    if (f.name == "output") f.extra = (2 * u + u * u) * b.outputWeight;
  std::ostringstream start;
  start << " delta=" << std::setprecision(3) << delta;
  const ::testing::AssertionResult bound = checkFields(a.fields, caseName, kRatio, true, "tf32bound.", start.str());
  const ::testing::AssertionResult inputs = checkFields(b.fields, caseName, inputsLimit, false, "tf32inputs.");
  if (!bound) return bound;
  return inputs;
}

// Prints the worst ratio per field when the test binary ends (the numbers to tune kRatio from).
class RatioSummary : public ::testing::Environment {
 public:
  void TearDown() override {
    for (const auto& [field, worst] : worstRatios())
      std::printf("TLCUDA summary field=%s worst_ratio=%.3g (limit %.1f)\n", field.c_str(), worst.ratio, worst.limit);
  }
};

// The options a case asks for: everything, with the dense plan only while it is small.
inline CudaOptions fullOptions(const CaseSpec& c, int tileRows = 0, int tileCols = 0) {
  CudaOptions o;
  o.plan = (long long)c.batch * c.nq * c.nk <= (1 << 25);
  o.histories = true;
  o.errors = true;
  o.tileRows = tileRows;
  o.tileCols = tileCols;
  return o;
}

}  // namespace tl::cuda::test
