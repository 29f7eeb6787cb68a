#include "data/source.h"

#include <sstream>

#include "common/errors.h"
#include "data/synthetic.h"
#include "io/npy.h"
#include "model/model_backend.h"

namespace tl {

const std::vector<GeneratorInfo>& syntheticGenerators() {
  static const std::vector<GeneratorInfo> generators = {
      {"gaussian", "Gaussian tokens", "queries and keys from Gaussian clusters in d dimensions", gaussianSchema(), false,
       generateGaussian},
      {"cloud", "3-D point cloud", "queries and keys sampled from a 3-D shape, drawn in space by the 3-D view",
       cloudSchema(), true, generateCloud},
  };
  return generators;
}

const GeneratorInfo& syntheticGenerator(const std::string& name) {
  std::string known;
  for (const auto& g : syntheticGenerators()) {
    if (g.name == name) return g;
    known += (known.empty() ? "" : ", ") + g.name;
  }
  throw InvalidArgument("unknown synthetic generator '" + name + "' (known: " + known + ")");
}

SourceSpec SourceSpec::parse(const std::string& text) {
  const auto [kind, rest] = splitFamily(text);
  SourceSpec s;
  if (kind == "synthetic") {
    const auto [generator, params] = splitFamily(rest);
    if (generator.empty())
      throw InvalidArgument("source '" + text + "': name a generator, e.g. synthetic:gaussian:n=256,d=64,seed=0");
    s.kind = Kind::Synthetic;
    s.generator = generator;
    s.params = syntheticGenerator(generator).schema.parse(params, "synthetic:" + generator);
    return s;
  }
  if (kind == "files") {
    s.kind = Kind::Files;
    std::stringstream ss(rest);
    std::string item;
    while (std::getline(ss, item, ',')) {
      const auto eq = item.find('=');
      const std::string key = item.substr(0, eq), value = eq == std::string::npos ? "" : item.substr(eq + 1);
      if (key == "q") s.q = value;
      else if (key == "k") s.k = value;
      else if (key == "v") s.v = value;
      else if (key == "mask") s.mask = value;
      else throw InvalidArgument("source '" + text + "': unknown key '" + key + "' (expected q, k, v, mask)");
    }
    if (s.q.empty() || s.k.empty()) throw InvalidArgument("source '" + text + "': q and k files are required");
    return s;
  }
  if (kind == "model") {
    s.kind = Kind::Model;
    s.model = ModelSourceSpec::parse(rest);
    return s;
  }
  throw InvalidArgument("source '" + text +
                        "' is not valid; expected synthetic:<generator>:key=value,..., files:q=Q.npy,k=K.npy or "
                        "model:checkpoint=DIR,image=fashion-mnist:test:0,layer=0,head=0");
}

std::string SourceSpec::toString() const {
  if (kind == Kind::Synthetic) {
    const std::string params_ = formatParams(params, &syntheticGenerator(generator).schema);
    return "synthetic:" + generator + (params_.empty() ? "" : ":" + params_);
  }
  if (kind == Kind::Model) return "model:" + model.toString();
  std::string out = "files:q=" + q + ",k=" + k;
  if (!v.empty()) out += ",v=" + v;
  if (!mask.empty()) out += ",mask=" + mask;
  return out;
}

bool SourceSpec::isPointCloud() const {
  return kind == Kind::Synthetic && syntheticGenerator(generator).pointCloud;
}

namespace {
// Re-raises validation errors with the file that holds the offending tensor.
void validateFiles(const AttentionInput<double>& in, const SourceSpec& s) {
  try {
    validateInput(in);
  } catch (const InvalidArgument& e) {
    std::string msg = e.what();
    auto mention = [&](const char* name, const std::string& path) {
      if (!path.empty() && msg.rfind(name, 0) == 0) msg += " (" + std::string(name) + " file: " + path + ")";
    };
    mention("Q", s.q);
    mention("K", s.k);
    mention("V", s.v);
    throw InvalidArgument(msg);
  }
}
}  // namespace

AttentionInput<double> attentionInputOf(const ModelRun& run, const ModelSourceSpec& spec) {
  const int layers = int(run.trace.layers.size());
  if (spec.layer >= layers)
    throw InvalidArgument("model source: layer " + std::to_string(spec.layer) + " does not exist; " + run.checkpoint +
                          " has layers 0.." + std::to_string(layers - 1));
  const auto& heads = run.trace.layers[size_t(spec.layer)].heads;
  if (spec.head >= int(heads.size()))
    throw InvalidArgument("model source: head " + std::to_string(spec.head) + " does not exist; " + run.checkpoint +
                          " has heads 0.." + std::to_string(int(heads.size()) - 1));
  return heads[size_t(spec.head)].input;
}

AttentionInput<double> loadSource(const SourceSpec& spec) {
  if (spec.kind == SourceSpec::Kind::Model) {
    return attentionInputOf(*modelBackend().run(spec.model, noFeedback()), spec.model);
  }
  if (spec.kind == SourceSpec::Kind::Synthetic) {
    const auto& gen = syntheticGenerator(spec.generator);
    AttentionInput<double> in = gen.generate(gen.schema.resolve(spec.params, "synthetic:" + spec.generator));
    validateInput(in);
    return in;
  }
  AttentionInput<double> in;
  in.Q = readNpyMatrix<double>(spec.q);
  in.K = readNpyMatrix<double>(spec.k);
  if (!spec.v.empty()) in.V = readNpyMatrix<double>(spec.v);
  if (!spec.mask.empty()) in.mask = readNpyMask(spec.mask);
  validateFiles(in, spec);
  return in;
}

}  // namespace tl
