#include "rankdecay/source.h"

#include "common/errors.h"

namespace tl::rankdecay {

const ParamSchema& stackSchema() {
  static const ParamSchema schema({
      intParam("n", 2, 4096, 32, "tokens per sequence"),
      intParam("d", 1, 4096, 64, "model width; each head has d/H dimensions"),
      intParam("H", 1, 64, 4, "heads per layer"),
      intParam("L", 1, 256, 12, "layers"),
      positiveParam("scale", 1, "multiplier on every score matrix (near-uniform ↔ peaked attention)"),
      choiceParam("ln", {"none", "pre", "post"}, "LayerNorm: none (the theory's setting), pre-norm or post-norm"),
      choiceParam("skip_scope", {"all", "attention_only"},
                  "configurations without skip remove every skip (all) or only the attention skip"),
  });
  return schema;
}

const ParamSchema& randomSchema() {
  static const ParamSchema schema({
      intParam("n", 2, 4096, 50, "size of each random score matrix"),
      realParam("s", 0, 1e3, 1, "standard deviation of the i.i.d. Gaussian scores"),
      intParam("L", 1, 256, 24, "largest path depth t"),
      boolParam("skip", false, "skip mimic: ⌊t/2⌋ factors of each product, chosen uniformly, replaced by I"),
  });
  return schema;
}

namespace {

ParamSpec imagesParam() {
  ParamSpec spec = pathParam("images", "fashion-mnist:SPLIT:FIRST-LAST (the Debian dataset) or image files");
  spec.optional = false;
  spec.defaultValue = std::string("fashion-mnist:test:0-99");
  return spec;
}

}  // namespace

const ParamSchema& modelSchema() {
  static const ParamSchema schema({
      pathParam("checkpoint", "ViT checkpoint folder or file"),
      imagesParam(),
  });
  return schema;
}

std::string sourceKindName(SourceKind kind) {
  switch (kind) {
    case SourceKind::Stack: return "stack";
    case SourceKind::Random: return "random";
    case SourceKind::Model: return "model";
  }
  return "stack";
}

namespace {

const ParamSchema& schemaOf(SourceKind kind) {
  switch (kind) {
    case SourceKind::Stack: return stackSchema();
    case SourceKind::Random: return randomSchema();
    case SourceKind::Model: return modelSchema();
  }
  return stackSchema();
}

}  // namespace

std::string RankDecaySource::toString() const {
  return sourceKindName(kind) + ":" + formatParams(params, &schemaOf(kind));
}

RankDecaySource parseRankDecaySource(const std::string& text) {
  const auto [kindName, rest] = splitFamily(text);
  RankDecaySource source;
  if (kindName == "stack") source.kind = SourceKind::Stack;
  else if (kindName == "random") source.kind = SourceKind::Random;
  else if (kindName == "model") source.kind = SourceKind::Model;
  else
    throw InvalidArgument("--source: unknown kind '" + kindName +
                          "'; expected stack:..., random:... or model:checkpoint=DIR,images=...");
  source.params = schemaOf(source.kind).parse(rest, kindName);
  if (source.kind == SourceKind::Model && !getOptionalString(source.params, "checkpoint"))
    throw InvalidArgument("--source model: needs checkpoint=DIR");
  return source;
}

StackSpec stackSpec(const RankDecaySource& source, BlockConfig config) {
  StackSpec spec;
  spec.n = int(getInt(source.params, "n"));
  spec.width = int(getInt(source.params, "d"));
  spec.heads = int(getInt(source.params, "H"));
  spec.layers = int(getInt(source.params, "L"));
  spec.scale = getReal(source.params, "scale");
  spec.layerNorm = parseLayerNorm(getString(source.params, "ln"));
  spec.skipScope = parseSkipScope(getString(source.params, "skip_scope"));
  spec.config = config;
  validate(spec);
  return spec;
}

RandomMatrixSpec randomSpec(const RankDecaySource& source) {
  RandomMatrixSpec spec;
  spec.n = int(getInt(source.params, "n"));
  spec.s = getReal(source.params, "s");
  spec.depth = int(getInt(source.params, "L"));
  spec.skip = getBool(source.params, "skip");
  return spec;
}

std::string describeRankDecaySources() {
  std::string text = "sources (--source KIND:key=value,...):\n";
  for (SourceKind kind : {SourceKind::Stack, SourceKind::Random, SourceKind::Model})
    text += "  " + sourceKindName(kind) + "\n" + describeSchema(schemaOf(kind), "    ");
  return text;
}

}  // namespace tl::rankdecay
