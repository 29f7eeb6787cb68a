// `tlens extract`: run a ViT checkpoint on one image and write what a script needs to study its attention:
// logits, and per layer and head Q, K, V (unscaled, as `tlens plan --q --k` takes them) and the model's own
// attention plan, plus each block's output, with an index.json that names every file.
#include <cstdio>
#include <filesystem>
#include <iostream>

#include <nlohmann/json.hpp>

#include "arguments.h"
#include "commands.h"
#include "io/atomic_file.h"
#include "io/npy.h"
#include "model/vit_inference.h"
#include "model_options.h"
#include "terminal_progress.h"

namespace tl::cli {
namespace {

CommandLine extractCommandLine() {
  std::vector<OptionSpec> options = checkpointOptions();
  const auto images = imageOptions();
  options.insert(options.end(), images.begin(), images.end());
  options.push_back({"out", "DIR", "output folder (created if missing)"});
  options.push_back({"json", "FILE", "also write the index (what index.json holds) to FILE"});
  return CommandLine("extract",
                     "Run a ViT checkpoint on one image; write logits.npy and, per layer and head, Q, K, V and the "
                     "model's attention (L03_H1_q.npy, ...), each block's output (L03_out.npy) and index.json.",
                     std::move(options), {{"CKPT", "checkpoint folder or weights file"}});
}

// "L03_H1_q.npy": two-digit layers sort in order in a file listing for any ViT up to 100 layers.
std::string fileName(int layer, int head, const std::string& what) {
  char name[64];
  if (head < 0) std::snprintf(name, sizeof name, "L%02d_%s.npy", layer, what.c_str());
  else std::snprintf(name, sizeof name, "L%02d_H%d_%s.npy", layer, head, what.c_str());
  return name;
}

std::string labelName(const VitConfig& config, int index) {
  return index >= 0 && index < config.numLabels() ? config.labels[size_t(index)] : "class " + std::to_string(index);
}

}  // namespace

int extractCommand(const Args& args) {
  CommandLine cl = extractCommandLine();
  cl.parse(args);
  if (cl.helpRequested()) {
    std::cout << cl.usage();
    return 0;
  }
  if (cl.positionals().size() != 1) throw InvalidArgument("extract: give one checkpoint (see tlens extract --help)");
  const std::string checkpoint = cl.positionals().front();
  const std::string outDir = cl.required("out");
  const ImageSource source = imageSourceFrom(cl);
  const VitRunner runner = VitRunner::open(checkpoint, importOptionsFrom(cl));
  const VitConfig& config = runner.config();
  const ModelImage image = loadModelImage(source, config);
  VitTrace trace;
  {
    TerminalProgress progress;  // the model's layers on a terminal; Ctrl-C cancels (exit 1, "canceled")
    InterruptScope interrupts(progress.feedback());
    trace = runner.run(image.pixels, progress.feedback());
  }

  std::filesystem::create_directories(outDir);
  auto put = [&](const std::string& name, const auto& array) { writeNpy(outDir + "/" + name, array); };
  put("logits.npy", trace.logits);
  put("embeddings.npy", trace.embeddings);
  nlohmann::json layers = nlohmann::json::array();
  for (int l = 0; l < int(trace.layers.size()); ++l) {
    const VitLayerTrace& layer = trace.layers[size_t(l)];
    nlohmann::json heads = nlohmann::json::array();
    for (int h = 0; h < int(layer.heads.size()); ++h) {
      const VitHeadTrace& head = layer.heads[size_t(h)];
      nlohmann::json files;
      for (const auto& [what, array] : {std::pair<std::string, const MatD*>{"q", &head.input.Q}, {"k", &head.input.K},
                                        {"v", &*head.input.V}, {"attention", &head.attention}}) {
        put(fileName(l, h, what), *array);
        files[what] = fileName(l, h, what);
      }
      heads.push_back(files);
    }
    put(fileName(l, -1, "out"), layer.output);
    layers.push_back({{"layer", l}, {"operator", layer.op.toString()}, {"heads", heads}, {"output", fileName(l, -1, "out")}});
  }
  const int predicted = trace.predicted();
  nlohmann::json index = {
      {"checkpoint", checkpoint},
      {"image", source.toString()},
      {"image_description", image.description},
      {"tokens", config.numTokens()},
      {"cls_token", 0},
      {"patch_grid", {config.gridSize(), config.gridSize()}},
      {"head_dim", config.headDim},
      {"logits", "logits.npy"},
      {"embeddings", "embeddings.npy"},
      {"predicted", predicted},
      {"predicted_label", labelName(config, predicted)},
      {"labels", config.labels},
      {"layers", layers},
      {"note", "Q and K are unscaled: the operators apply S = QK^T/sqrt(d) themselves (tlens plan --q --k)"}};
  if (image.label) index["label"] = *image.label;
  writeFileAtomically(outDir + "/index.json", index.dump(2) + "\n");
  if (const auto json = cl.get("json")) writeFileAtomically(*json, index.dump(2) + "\n");
  std::cout << image.description << ": predicted " << labelName(config, predicted)
            << (image.label ? " (true: " + labelName(config, *image.label) + ")" : std::string())
            << "; wrote " << trace.layers.size() << " layers × " << config.numHeads << " heads to " << outDir << "\n";
  return 0;
}

}  // namespace tl::cli
