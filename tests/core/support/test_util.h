#pragma once
// Small helpers shared by the core unit tests: comparisons that report where matrices differ, independent
// reference formulas (written here from docs/, not taken from core/), seeded test data and temporary
// folders. Comparison helpers return AssertionResult and are [[nodiscard]] so a comparison cannot be
// written without asserting on it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "common/errors.h"
#include "common/matrix.h"

namespace tl::test {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr float kFloatInf = std::numeric_limits<float>::infinity();
// The ViT fixtures (tests/fixtures/vit: configs, weights and the PyTorch outputs they must reproduce).
inline const std::string kVitFixtures = std::string(TL_FIXTURE_DIR) + "/vit/";

// ---------------------------------------------------------------------------------------------------------
// Comparisons

// The same float32 values bit for bit (any NaN matches any NaN): what a lossless file round trip must give.
[[nodiscard]] inline ::testing::AssertionResult sameBits(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return ::testing::AssertionFailure() << a.size() << " vs " << b.size() << " values";
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::memcmp(&a[i], &b[i], 4) != 0 && !(std::isnan(a[i]) && std::isnan(b[i])))
      return ::testing::AssertionFailure() << "value " << i << ": " << a[i] << " vs " << b[i];
  }
  return ::testing::AssertionSuccess();
}

// Max |a - b| over all entries; entries that are both +inf or both -inf count as equal, NaN never does.
template <class DA, class DB>
[[nodiscard]] ::testing::AssertionResult matricesNear(const Eigen::MatrixBase<DA>& a, const Eigen::MatrixBase<DB>& b,
                                                      double tol) {
  if (a.rows() != b.rows() || a.cols() != b.cols()) {
    return ::testing::AssertionFailure() << "shape " << a.rows() << "x" << a.cols() << " vs " << b.rows() << "x"
                                         << b.cols();
  }
  double worst = 0;
  Eigen::Index wi = 0, wj = 0;
  for (Eigen::Index i = 0; i < a.rows(); ++i) {
    for (Eigen::Index j = 0; j < a.cols(); ++j) {
      const double x = double(a(i, j)), y = double(b(i, j));
      if (std::isnan(x) || std::isnan(y)) {
        return ::testing::AssertionFailure() << "NaN at (" << i << "," << j << "): " << x << " vs " << y;
      }
      if (std::isinf(x) || std::isinf(y)) {
        if (x != y) return ::testing::AssertionFailure() << "inf mismatch at (" << i << "," << j << "): " << x << " vs " << y;
        continue;
      }
      const double diff = std::abs(x - y);
      if (diff > worst) {
        worst = diff;
        wi = i;
        wj = j;
      }
    }
  }
  if (worst > tol) {
    return ::testing::AssertionFailure() << "max |diff| = " << worst << " > tol " << tol << " at (" << wi << ","
                                         << wj << "): " << double(a(wi, wj)) << " vs " << double(b(wi, wj));
  }
  return ::testing::AssertionSuccess() << "max |diff| = " << worst;
}

[[nodiscard]] inline ::testing::AssertionResult near(double a, double b, double tol) {
  if (std::isnan(a) || std::isnan(b) || !(std::abs(a - b) <= tol)) {
    return ::testing::AssertionFailure() << a << " vs " << b << " (|diff| = " << std::abs(a - b) << ", tol " << tol
                                         << ")";
  }
  return ::testing::AssertionSuccess();
}

// Bitwise equality of two matrices (shape and every entry).
template <class DA, class DB>
[[nodiscard]] ::testing::AssertionResult matricesIdentical(const Eigen::MatrixBase<DA>& a,
                                                           const Eigen::MatrixBase<DB>& b) {
  return matricesNear(a, b, 0.0);
}

inline std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return s;
}

// Runs `f`; succeeds only when it throws exactly the exception type E (or a subclass) and the message
// contains every needle (case-insensitive).
template <class E, class F>
[[nodiscard]] ::testing::AssertionResult throwsWith(F&& f, const std::vector<std::string>& needles = {}) {
  try {
    f();
  } catch (const E& e) {
    const std::string msg = lower(e.what());
    for (const auto& needle : needles) {
      if (msg.find(lower(needle)) == std::string::npos) {
        return ::testing::AssertionFailure() << "message \"" << e.what() << "\" does not mention \"" << needle << "\"";
      }
    }
    return ::testing::AssertionSuccess() << "threw: " << e.what();
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << "threw the wrong exception type: " << e.what();
  } catch (...) {
    return ::testing::AssertionFailure() << "threw a non-std exception";
  }
  return ::testing::AssertionFailure() << "did not throw";
}

// ---------------------------------------------------------------------------------------------------------
// Seeded test data (own Box–Muller on mt19937_64 so the data do not depend on core/data/random).

inline MatD gaussian(int rows, int cols, uint64_t seed, double scale = 1.0) {
  std::mt19937_64 engine(seed);
  auto uniform01 = [&] { return (double(engine() >> 11) + 0.5) * (1.0 / 9007199254740992.0); };
  MatD m(rows, cols);
  for (int i = 0; i < rows; ++i) {
    for (int j = 0; j < cols; ++j) {
      const double r = std::sqrt(-2.0 * std::log(uniform01()));
      m(i, j) = scale * r * std::cos(2.0 * M_PI * uniform01());
    }
  }
  return m;
}

// ---------------------------------------------------------------------------------------------------------
// Independent reference formulas (docs/conventions.md#scores, docs/operators/sinkhorn.md#definition)

// S = Q Kᵀ / √d.
inline MatD referenceScores(const MatD& Q, const MatD& K) { return (Q * K.transpose()) / std::sqrt(double(Q.cols())); }

// Row softmax of X (stable, max-subtracted); columns with keyMask false get exactly 0.
inline MatD referenceRowSoftmax(const MatD& X, const std::vector<bool>& keyValid = {}) {
  MatD A = MatD::Zero(X.rows(), X.cols());
  for (Eigen::Index i = 0; i < X.rows(); ++i) {
    double m = -kInf;
    for (Eigen::Index j = 0; j < X.cols(); ++j)
      if (keyValid.empty() || keyValid[j]) m = std::max(m, X(i, j));
    double s = 0;
    for (Eigen::Index j = 0; j < X.cols(); ++j)
      if (keyValid.empty() || keyValid[j]) s += std::exp(X(i, j) - m);
    for (Eigen::Index j = 0; j < X.cols(); ++j)
      if (keyValid.empty() || keyValid[j]) A(i, j) = std::exp(X(i, j) - m) / s;
  }
  return A;
}

// Plain matrix-normalisation Sinkhorn, docs/operators/sinkhorn.md#definition (not log domain):
// A^(0) = exp(S/eps) (masked key columns 0), odd steps normalise rows to 1, even steps normalise active
// columns to 1. Attention scale. Only for moderate scores (no overflow); max-subtracted per row before
// exponentiating, which N_r absorbs.
inline MatD referenceMatrixSinkhorn(const MatD& S, double eps, int T, const std::vector<bool>& keyValid = {}) {
  MatD A(S.rows(), S.cols());
  for (Eigen::Index i = 0; i < S.rows(); ++i) {
    const double m = S.row(i).maxCoeff();
    for (Eigen::Index j = 0; j < S.cols(); ++j)
      A(i, j) = (keyValid.empty() || keyValid[j]) ? std::exp((S(i, j) - m) / eps) : 0.0;
  }
  for (int t = 1; t <= T; ++t) {
    if (t % 2 == 1) {
      for (Eigen::Index i = 0; i < A.rows(); ++i) A.row(i) /= A.row(i).sum();
    } else {
      for (Eigen::Index j = 0; j < A.cols(); ++j) {
        const double c = A.col(j).sum();
        if (c > 0) A.col(j) /= c;
      }
    }
  }
  return A;
}

// A = scale · exp((S + u ⊕ v)/eps), docs/conventions.md#duals; -inf duals give exact 0.
inline MatD planFromDuals(const MatD& S, const VecD& u, const VecD& v, double eps, double scale) {
  MatD A(S.rows(), S.cols());
  for (Eigen::Index i = 0; i < S.rows(); ++i) {
    for (Eigen::Index j = 0; j < S.cols(); ++j) {
      const double x = S(i, j) + u(i) + v(j);
      A(i, j) = std::isinf(x) && x < 0 ? 0.0 : scale * std::exp(x / eps);
    }
  }
  return A;
}

inline MatD permuteRows(const MatD& M, const std::vector<int>& perm) {
  MatD out(Eigen::Index(perm.size()), M.cols());
  for (int i = 0; i < int(perm.size()); ++i) out.row(i) = M.row(perm[i]);
  return out;
}

// Rows and columns of the valid tokens only.
inline MatD selectRows(const MatD& M, const std::vector<int>& rows) { return permuteRows(M, rows); }

inline Mask makeMask(const std::vector<bool>& valid) {
  Mask m(int(valid.size()));
  for (int i = 0; i < int(valid.size()); ++i) m(i) = valid[i];
  return m;
}

// ---------------------------------------------------------------------------------------------------------
// Files

// A fresh, empty folder under the system temp dir, removed with everything in it at scope exit.
class TempDir {
 public:
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = "tl_test_";
    if (info) name += std::string(info->test_suite_name()) + "_" + info->name();
    for (auto& c : name)
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') c = '_';
    std::random_device rd;
    path_ = std::filesystem::temp_directory_path() / (name + "_" + std::to_string(rd()));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  // Names of everything directly inside the folder, sorted.
  std::vector<std::string> list() const {
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(path_)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }

 private:
  std::filesystem::path path_;
};

inline void writeBytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
}

inline std::string readBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace tl::test
