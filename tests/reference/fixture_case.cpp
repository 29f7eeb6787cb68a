#include "fixture_case.h"

#include <cmath>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "io/npy.h"

namespace tl::testing {

std::string fixtureRoot() { return std::string(TL_FIXTURE_DIR) + "/sinkhorn"; }

std::string FixtureCase::dir() const { return fixtureRoot() + "/" + name; }

std::string FixtureCase::file(const std::string& stem) const { return dir() + "/" + stem + ".npy"; }

AttentionInput<double> FixtureCase::input() const {
  AttentionInput<double> in;
  in.Q = readNpyMatrix<double>(file("q"));
  in.K = readNpyMatrix<double>(file("k"));
  in.V = readNpyMatrix<double>(file("v"));
  if (hasMask) in.mask = readNpyMask(file("mask"));
  return in;
}

MatD FixtureCase::expected(const std::string& stem) const { return readNpyMatrix<double>(file(stem)); }

std::vector<FixtureCase> loadFixtureCases() {
  std::ifstream in(fixtureRoot() + "/cases.json");
  if (!in) return {};
  const auto manifest = nlohmann::json::parse(in);
  std::vector<FixtureCase> cases;
  for (const auto& c : manifest.at("cases")) {
    FixtureCase fc;
    fc.name = c.at("name").get<std::string>();
    fc.op = c.at("op").get<std::string>();
    fc.family = c.at("family").get<std::string>();
    fc.T = c.at("T").get<int>();
    fc.eps = c.at("eps").get<double>();
    fc.maskMode = c.at("mask_mode").get<std::string>();
    fc.hasMask = c.at("mask").get<bool>();
    cases.push_back(fc);
  }
  return cases;
}

std::optional<std::string> compareWithInf(const MatD& actual, const MatD& expected, double tol) {
  std::ostringstream msg;
  if (actual.rows() != expected.rows() || actual.cols() != expected.cols()) {
    msg << "shape " << actual.rows() << "x" << actual.cols() << ", expected " << expected.rows() << "x"
        << expected.cols();
    return msg.str();
  }
  for (Eigen::Index i = 0; i < expected.rows(); ++i) {
    for (Eigen::Index j = 0; j < expected.cols(); ++j) {
      const double a = actual(i, j), e = expected(i, j);
      const bool sameInf = std::isinf(e) ? (a == e) : std::isfinite(a);
      if (!sameInf || (std::isfinite(e) && std::abs(a - e) > tol)) {
        msg.precision(17);
        msg << "entry (" << i << "," << j << ") = " << a << ", expected " << e << " (tol " << tol << ")";
        return msg.str();
      }
    }
  }
  return std::nullopt;
}

std::string testName(const FixtureCase& c) {
  std::string s = c.name;
  for (char& ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s;
}

}  // namespace tl::testing
