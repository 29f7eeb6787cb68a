#pragma once
// What both `tlens bench` modes (operators, --training) report: the median of repeated timings and the
// machine they ran on.
#include <string>
#include <vector>

namespace tl::cli {

double median(std::vector<double> xs);
// The CPU model as /proc/cpuinfo names it ("unknown" elsewhere).
std::string cpuModel();

}  // namespace tl::cli
