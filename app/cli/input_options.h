#pragma once
// The input flags shared by the commands that run operators on one input (`plan`, `compare`): where Q, K,
// V and the mask come from, and the computation precision. Declared once so both commands accept the same.
#include <vector>

#include "arguments.h"
#include "session/session.h"
#include "session/source.h"

namespace tl::cli {

// --q, --k, --v, --mask, --source, --precision, --device.
std::vector<OptionSpec> inputOptions();

// The source the flags name: --source, or --q and --k (with optional --v, --mask). Throws InvalidArgument
// when both or neither are given.
SourceSpec sourceFrom(const CommandLine& cl);
Precision precisionFrom(const CommandLine& cl);  // default f64
DeviceChoice deviceFrom(const CommandLine& cl);  // default cpu

}  // namespace tl::cli
