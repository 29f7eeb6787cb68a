#include "commands.h"
#include "data/synthetic.h"
#include "ops/registry.h"
#include "session/source.h"

namespace tl::cli {

std::string operatorsHelp() {
  std::string text = "operators (--op \"family:key=value,...\"; parameters not given take their defaults):\n";
  for (const auto& family : OperatorRegistry::builtin().families()) {
    text += "  " + family.name + "  " + family.description + "\n";
    text += describeSchema(family.schema, "      ");
  }
  return text;
}

std::string sourcesHelp() {
  std::string text = "sources (--source \"synthetic:NAME:key=value,...\", or --q/--k[/--v/--mask] .npy files):\n";
  for (const auto& generator : syntheticGenerators()) {
    text += "  synthetic:" + generator.name + "  " + generator.description + "\n";
    text += describeSchema(generator.schema, "      ");
  }
  return text;
}

}  // namespace tl::cli
