#pragma once
// Loads the PyTorch reference fixtures of tests/fixtures/sinkhorn/ (made by
// scripts/reference/make_fixtures.py) and compares arrays with them. Shared by the core cross-check
// (tests/reference) and the CLI end-to-end tests (tests/app).
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "common/attention_input.h"
#include "common/matrix.h"

namespace tl::testing {

struct FixtureCase {
  std::string name;      // folder under tests/fixtures/sinkhorn
  std::string op;        // operator string, e.g. "sinkhorn:T=3,eps=0.3,mask_mode=keep-queries"
  std::string family;    // "sinkhorn" | "softmax"
  int T = 1;
  double eps = 1.0;
  std::string maskMode;  // "subsequence" | "keep-queries"
  bool hasMask = false;

  std::string dir() const;
  std::string file(const std::string& stem) const;  // <dir>/<stem>.npy
  AttentionInput<double> input() const;             // q, k, v and mask when present
  MatD expected(const std::string& stem) const;     // plan, u, v_dual, output (vectors as n × 1)
};

std::string fixtureRoot();
// Every case listed in cases.json; an empty list when the manifest is missing (a test checks that).
std::vector<FixtureCase> loadFixtureCases();

// Empty when every entry matches: the same -inf positions, finite entries within `tol` (absolute).
// Otherwise a message naming the first offending entry, for the assertion.
[[nodiscard]] std::optional<std::string> compareWithInf(const MatD& actual, const MatD& expected, double tol);

// Test names and failure messages show the case name, not the struct's bytes.
inline void PrintTo(const FixtureCase& c, std::ostream* os) { *os << c.name; }

// gtest-friendly case name (letters, digits, underscores).
std::string testName(const FixtureCase& c);

}  // namespace tl::testing
