#include "banded_options.h"

#include <algorithm>

#include "common/errors.h"
#include "input_options.h"
#include "io/npy.h"
#include "ops/registry.h"
#include "session/source_loader.h"

namespace tl::cli {

std::vector<OptionSpec> bandedInputOptions(bool withPrecision) {
  std::vector<OptionSpec> options = inputOptions();
  options.erase(std::remove_if(options.begin(), options.end(),
                               [&](const OptionSpec& o) {
                                 return o.name == "device" || (!withPrecision && o.name == "precision");
                               }),
                options.end());
  return options;
}

BandedParams bandedParamsFrom(const CommandLine& cl) {
  const OperatorSpec spec = OperatorRegistry::builtin().parse(cl.required("op"));
  if (spec.family != "banded")
    throw InvalidArgument("'" + cl.command() + "' needs a banded operator (got '" + spec.family +
                          "'), e.g. --op \"banded:W=16,base_steps=15,tail_steps=2\"");
  return BandedParams::from(spec.params);
}

AttentionInput<double> bandedInputFrom(const CommandLine& cl) { return loadSource(sourceFrom(cl)).attention(); }

MatD lossWeightsFrom(const CommandLine& cl) { return readNpyMatrix<double>(cl.required("loss-weights")); }

}  // namespace tl::cli
