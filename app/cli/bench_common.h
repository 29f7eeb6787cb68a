#pragma once
// What both `tlens bench` modes (operators, --training) report: the median of repeated timings and the
// machine they ran on.
#include <cstdint>
#include <string>
#include <vector>

#include "common/attention_input.h"
#include "data/random.h"

namespace tl::cli {

double median(std::vector<double> xs);
// The CPU model as /proc/cpuinfo names it ("unknown" elsewhere).
std::string cpuModel();

// An n × d matrix of N(0, 1) draws taken from `random` in storage order.
template <class T>
Mat<T> gaussianMatrix(SeededRandom& random, int n, int d) {
  Mat<T> m(n, d);
  for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = T(random.normal());
  return m;
}

// One head with Q, K, V ~ N(0, 1), n × d, drawn in that order from `seed`: the distribution
// bench_reference.py draws as well.
template <class T>
AttentionInput<T> gaussianHead(int n, int d, uint64_t seed) {
  SeededRandom random(seed);
  AttentionInput<T> input;
  input.Q = gaussianMatrix<T>(random, n, d);
  input.K = gaussianMatrix<T>(random, n, d);
  input.V = gaussianMatrix<T>(random, n, d);
  return input;
}

}  // namespace tl::cli
