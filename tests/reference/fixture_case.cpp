#include "fixture_case.h"

#include <cctype>
#include <cmath>
#include <fstream>
#include <sstream>
#include <utility>

#include "io/npy.h"

namespace tl::testing {

ReferenceCase::ReferenceCase(std::string set_, const nlohmann::json& entry)
    : set(std::move(set_)),
      name(entry.at("name").get<std::string>()),
      op(entry.at("op").get<std::string>()),
      hasMask(entry.at("mask").get<bool>()) {}

std::string ReferenceCase::dir() const { return fixtureRoot(set) + "/" + name; }

std::string ReferenceCase::file(const std::string& stem) const { return dir() + "/" + stem + ".npy"; }

MatD ReferenceCase::expected(const std::string& stem) const { return readNpyMatrix<double>(file(stem)); }

AttentionInput<double> ReferenceCase::input() const {
  AttentionInput<double> in;
  in.Q = expected("q");
  in.K = expected("k");
  in.V = expected("v");
  if (hasMask) in.mask = readNpyMask(file("mask"));
  return in;
}

MatD ReferenceCase::expectedOnValid(const std::string& stem) const {
  const MatD full = expected(stem);
  if (!hasMask) return full;
  const Mask mask = readNpyMask(file("mask"));
  MatD valid(mask.count(), full.cols());
  for (Eigen::Index i = 0, r = 0; i < mask.size(); ++i)
    if (mask(i)) valid.row(r++) = full.row(i);
  return valid;
}

std::ostream& operator<<(std::ostream& os, const ReferenceCase& c) { return os << c.name; }

std::string testName(const ReferenceCase& c) {
  std::string s = c.name;
  for (char& ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s;
}

std::string fixtureRoot(const std::string& set) { return std::string(TL_FIXTURE_DIR) + "/" + set; }

nlohmann::json manifestCases(const std::string& set) {
  std::ifstream in(fixtureRoot(set) + "/cases.json");
  if (!in) return nlohmann::json::array();
  return nlohmann::json::parse(in).at("cases");
}

std::optional<std::string> checkManifest(const std::string& set, std::size_t atLeast) {
  const std::size_t n = manifestCases(set).size();
  if (n >= atLeast) return std::nullopt;
  return fixtureRoot(set) + "/cases.json lists " + std::to_string(n) + " cases, expected at least " +
         std::to_string(atLeast) + " (missing or short manifest)";
}

SinkhornCase::SinkhornCase(const nlohmann::json& entry)
    : ReferenceCase("sinkhorn", entry),
      family(entry.at("family").get<std::string>()),
      T(entry.at("T").get<int>()),
      eps(entry.at("eps").get<double>()),
      maskMode(entry.at("mask_mode").get<std::string>()) {}

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

}  // namespace tl::testing
