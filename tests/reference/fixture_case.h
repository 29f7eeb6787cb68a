#pragma once
// The PyTorch reference fixtures of tests/fixtures/<set>/ (made by scripts/reference/make_*fixtures.py, one
// folder per case, listed in <set>/cases.json) and comparisons with them. Shared by the cross-checks
// (tests/reference) and the CLI end-to-end tests (tests/app).
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/attention_input.h"
#include "common/matrix.h"

namespace tl::testing {

// What every fixture set records about a case: its folder, operator string and whether it has a mask. Each
// set's test derives its case type from it with the manifest fields it needs.
struct ReferenceCase {
  std::string set;   // folder under tests/fixtures: "sinkhorn", "lot", "esp", "asap", "banded"
  std::string name;  // case folder under the set
  std::string op;    // operator string from the manifest (without file parameters where the set says so)
  bool hasMask = false;

  ReferenceCase() = default;
  ReferenceCase(std::string set, const nlohmann::json& entry);  // name, op and mask of one manifest entry

  std::string dir() const;
  std::string file(const std::string& stem) const;   // <dir>/<stem>.npy
  MatD expected(const std::string& stem) const;      // any array of the case (vectors as n × 1)
  AttentionInput<double> input() const;              // q, k, v and mask when present
  // A per-token array restricted to the valid tokens, the system an operator solves under
  // mask_mode=subsequence; the whole array when the case has no mask.
  MatD expectedOnValid(const std::string& stem) const;
};

// Test names and failure messages show the case name, not the struct's bytes.
std::ostream& operator<<(std::ostream& os, const ReferenceCase& c);

// gtest-friendly case name (letters, digits, underscores).
std::string testName(const ReferenceCase& c);

std::string fixtureRoot(const std::string& set);  // tests/fixtures/<set>

// The "cases" array of tests/fixtures/<set>/cases.json; empty when the manifest is missing (every suite has a
// test that says so).
nlohmann::json manifestCases(const std::string& set);

// Empty when tests/fixtures/<set>/cases.json lists at least `atLeast` cases; otherwise what is wrong.
[[nodiscard]] std::optional<std::string> checkManifest(const std::string& set, std::size_t atLeast);

// Every case of a set, each built from its manifest entry by `Case(const nlohmann::json&)`.
template <class Case>
std::vector<Case> loadCases(const std::string& set) {
  std::vector<Case> cases;
  for (const auto& entry : manifestCases(set)) cases.emplace_back(entry);
  return cases;
}

// tests/fixtures/sinkhorn: softmax and Sinkhorn cases, replayed by the core cross-check and by `tlens plan`.
struct SinkhornCase : ReferenceCase {
  std::string family;  // "sinkhorn" | "softmax"
  int T = 1;
  double eps = 1.0;
  std::string maskMode;  // "subsequence" | "keep-queries"

  SinkhornCase() = default;
  explicit SinkhornCase(const nlohmann::json& entry);
};

// Empty when every entry matches: the same -inf positions, finite entries within `tol` (absolute).
// Otherwise a message naming the first offending entry, for the assertion.
[[nodiscard]] std::optional<std::string> compareWithInf(const MatD& actual, const MatD& expected, double tol);

}  // namespace tl::testing
