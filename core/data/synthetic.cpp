#include "data/synthetic.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "common/errors.h"
#include "data/random.h"

namespace tl {
namespace {

// Uniform direction on the sphere S^2.
Eigen::Vector3d randomDirection(SeededRandom& rng) {
  Eigen::Vector3d z(rng.normal(), rng.normal(), rng.normal());
  const double norm = z.norm();
  return norm > 0 ? Eigen::Vector3d(z / norm) : Eigen::Vector3d(1, 0, 0);
}

// A point on the shape and its position along the shape's main parameter (used to order tokens).
struct ShapePoint {
  Eigen::Vector3d x;
  double position;
};

ShapePoint samplePoint(const std::string& shape, SeededRandom& rng) {
  if (shape == "sphere") {
    const Eigen::Vector3d x = randomDirection(rng);
    return {x, std::atan2(x.y(), x.x())};
  }
  if (shape == "torus") {
    // Major radius 1, minor radius 0.35, angles uniform (a slight density bias toward the inner ring is fine).
    const double a = 2 * M_PI * rng.uniform(), b = 2 * M_PI * rng.uniform();
    const double ring = 1.0 + 0.35 * std::cos(b);
    return {{ring * std::cos(a), ring * std::sin(a), 0.35 * std::sin(b)}, a};
  }
  if (shape == "two-clusters") {
    const double side = rng.uniform() < 0.5 ? -1.0 : 1.0;
    const Eigen::Vector3d x = Eigen::Vector3d(side * 0.8, 0, 0) + 0.25 * Eigen::Vector3d(rng.normal(), rng.normal(), rng.normal());
    return {x, x.x()};
  }
  // noisy-line: along the diagonal direction, points in [-1, 1].
  const double s = 2 * rng.uniform() - 1;
  return {s * Eigen::Vector3d(1, 1, 1).normalized(), s};
}

}  // namespace

ParamSchema gaussianSchema() {
  return ParamSchema({
      intParam("n", 1, 200000, 256, "number of tokens (queries = keys = n)", 2048),
      intParam("d", 1, 4096, 64, "head dimension", 256),
      realParam("spread", 0, 100, 1.0, "standard deviation of tokens around their cluster centre"),
      realParam("offset", -100, 100, 0.0, "mean offset between queries and keys (along the normalised all-ones direction)"),
      intParam("clusters", 1, 1000, 1, "number of Gaussian clusters shared by queries and keys", 32),
      intParam("seed", 0, 2147483647, 0, "random seed: the same seed gives the same input, bit for bit", 1000),
  });
}

AttentionInput<double> generateGaussian(const ParamSet& p) {
  const auto n = Eigen::Index(getInt(p, "n")), d = Eigen::Index(getInt(p, "d"));
  const auto clusters = Eigen::Index(getInt(p, "clusters"));
  const double spread = getReal(p, "spread"), offset = getReal(p, "offset");
  SeededRandom rng(uint64_t(getInt(p, "seed")));

  MatD centres(clusters, d);
  for (Eigen::Index c = 0; c < clusters; ++c)
    for (Eigen::Index k = 0; k < d; ++k) centres(c, k) = clusters > 1 ? rng.normal() : 0.0;
  const Eigen::RowVectorXd shift = Eigen::RowVectorXd::Constant(d, offset / std::sqrt(double(d)));

  auto sample = [&](bool isKey) {
    MatD m(n, d);
    for (Eigen::Index i = 0; i < n; ++i) {
      const Eigen::Index c = i % clusters;
      for (Eigen::Index k = 0; k < d; ++k) m(i, k) = centres(c, k) + spread * rng.normal();
      if (isKey) m.row(i) += shift;
    }
    return m;
  };
  AttentionInput<double> in;
  in.Q = sample(false);
  in.K = sample(true);
  MatD V(n, d);
  for (Eigen::Index i = 0; i < n; ++i)
    for (Eigen::Index k = 0; k < d; ++k) V(i, k) = rng.normal();
  in.V = std::move(V);
  return in;
}

ParamSchema cloudSchema() {
  return ParamSchema({
      choiceParam("shape", {"torus", "sphere", "two-clusters", "noisy-line"},
                  "the 3-D shape queries and keys are sampled from"),
      intParam("n", 1, 200000, 300, "number of points on each side", 2048),
      realParam("noise", 0, 10, 0.05, "standard deviation of Gaussian noise added to every point"),
      realParam("offset", -10, 10, 0.0, "translation of the keys along x"),
      intParam("seed", 0, 2147483647, 0, "random seed: the same seed gives the same input, bit for bit", 1000),
  });
}

AttentionInput<double> generateCloud(const ParamSet& p) {
  const auto n = Eigen::Index(getInt(p, "n"));
  const std::string shape = getString(p, "shape");
  const double noise = getReal(p, "noise"), offset = getReal(p, "offset");
  SeededRandom rng(uint64_t(getInt(p, "seed")));
  // Tokens are ordered along the shape (torus/sphere angle, line position), so that a plan that moves
  // mass between nearby points shows as a band in the heatmap instead of scattered dots.
  auto sample = [&](double shiftX) {
    std::vector<ShapePoint> points;
    for (Eigen::Index i = 0; i < n; ++i) {
      ShapePoint p = samplePoint(shape, rng);
      p.x += noise * Eigen::Vector3d(rng.normal(), rng.normal(), rng.normal());
      p.x.x() += shiftX;
      points.push_back(p);
    }
    std::stable_sort(points.begin(), points.end(),
                     [](const ShapePoint& a, const ShapePoint& b) { return a.position < b.position; });
    MatD m(n, 3);
    for (Eigen::Index i = 0; i < n; ++i) m.row(i) = points[size_t(i)].x.transpose();
    return m;
  };
  AttentionInput<double> in;
  in.Q = sample(0.0);
  in.K = sample(offset);
  in.V = in.K;
  return in;
}

const std::vector<GeneratorInfo>& syntheticGenerators() {
  static const std::vector<GeneratorInfo> generators = {
      {"gaussian", "Gaussian tokens", "queries and keys from Gaussian clusters in d dimensions", gaussianSchema(), false,
       generateGaussian},
      {"cloud", "3-D point cloud", "queries and keys sampled from a 3-D shape, drawn in space by the 3-D view",
       cloudSchema(), true, generateCloud},
  };
  return generators;
}

const GeneratorInfo& syntheticGenerator(const std::string& name) {
  std::string known;
  for (const auto& g : syntheticGenerators()) {
    if (g.name == name) return g;
    known += (known.empty() ? "" : ", ") + g.name;
  }
  throw InvalidArgument("unknown synthetic generator '" + name + "' (known: " + known + ")");
}

}  // namespace tl
