#include "session/source_loader.h"

#include "common/errors.h"
#include "data/synthetic.h"
#include "io/npy.h"

namespace tl {
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

namespace {

AttentionInput<double> generated(const SourceSpec& spec) {
  const auto& gen = syntheticGenerator(spec.generator);
  AttentionInput<double> in = gen.generate(gen.schema.resolve(spec.params, "synthetic:" + spec.generator));
  validateInput(in);
  return in;
}

AttentionInput<double> readFiles(const SourceSpec& spec) {
  AttentionInput<double> in;
  in.Q = readNpyMatrix<double>(spec.q);
  in.K = readNpyMatrix<double>(spec.k);
  if (!spec.v.empty()) in.V = readNpyMatrix<double>(spec.v);
  if (!spec.mask.empty()) in.mask = readNpyMask(spec.mask);
  validateFiles(in, spec);
  return in;
}

}  // namespace

LoadedSource loadSource(const SourceSpec& spec, Feedback& feedback) {
  feedback.throwIfCanceled();
  LoadedSource loaded;
  switch (spec.kind) {
    case SourceSpec::Kind::Model: {
      feedback.setProgress(0.0, "running " + spec.model.checkpoint);
      loaded.model = modelBackend().run(spec.model, feedback);
      AttentionInput<double> input = attentionInputOf(*loaded.model, spec.model);
      validateInput(input);
      loaded.input = std::make_shared<const AttentionInput<double>>(std::move(input));
      break;
    }
    case SourceSpec::Kind::Synthetic:
      loaded.input = std::make_shared<const AttentionInput<double>>(generated(spec));
      break;
    case SourceSpec::Kind::Files:
      feedback.setProgress(0.0, "reading " + spec.q);
      loaded.input = std::make_shared<const AttentionInput<double>>(readFiles(spec));
      break;
  }
  return loaded;
}

}  // namespace tl
