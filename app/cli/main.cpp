// `tlens`: the headless front end. Composition only: parse, wire, report. Every failure is caught here and
// reported as one line on stderr; exit status 2 for usage errors (tl::InvalidArgument: bad flags, values,
// shapes, NaN/Inf input), 1 for files, resources and everything else (docs/architecture.md#errors).
#include <algorithm>
#include <iostream>
#include <map>
#include <new>

#include "commands.h"
#include "common/errors.h"
#include "common/large_buffers.h"
#ifdef TL_WITH_TORCH
#include "model/vit_model_backend.h"
#endif

namespace {

using Command = int (*)(const tl::cli::Args&);

struct CommandEntry {
  Command run;
  const char* summary;
};

const std::map<std::string, CommandEntry>& commands() {
  static const std::map<std::string, CommandEntry> table = {
      {"plan", {tl::cli::planCommand, "compute one operator's plan, duals, output and metrics for an input"}},
      {"grad", {tl::cli::gradCommand, "exact gradients dQ, dK, dV of banded Sinkhorn for the loss sum(G * output)"}},
      {"certify", {tl::cli::certifyCommand, "contraction and bias certificates of banded Sinkhorn (JSON)"}},
      {"compare", {tl::cli::compareCommand, "run several operators on one input; table of analyses and distances"}},
      {"render", {tl::cli::renderCommand, "run a session file and write its figures (PNG/SVG/PDF)"}},
      {"bench", {tl::cli::benchCommand, "time operators on the CPU next to the PyTorch reference"}},
      {"train", {tl::cli::trainCommand, "train a ViT on Fashion-MNIST on the CPU, with checkpoints and --resume"}},
      {"rank-decay", {tl::cli::rankDecayCommand, "rank collapse along attention paths and layer outputs, with theory curves"}},
      {"extract", {tl::cli::extractCommand, "run a ViT checkpoint on an image; write logits and per-head Q, K, V, attention"}},
      {"eval", {tl::cli::evalCommand, "a checkpoint's accuracy; with --swap, another operator plugged into it"}},
      {"asap-compile", {tl::cli::asapCompileCommand, "compile a Sinkhorn checkpoint into ASAP layers (calibration + fit)"}},
      {"asap-eval", {tl::cli::asapEvalCommand, "frozen-layer table of compiled ASAP layers against their teacher"}},
      {"asap-fit", {tl::cli::asapFitCommand, "fit a compiled ASAP layer's beta to Sinkhorn teacher duals (.npy)"}},
  };
  return table;
}

std::string mainHelp() {
  std::string text =
      "usage: tlens <command> [options]\n"
      "TransportLens command line: doubly-stochastic attention operators, headless.\n"
      "commands (tlens <command> --help lists every option):\n";
  size_t width = 0;
  for (const auto& entry : commands()) width = std::max(width, entry.first.size());
  for (const auto& [name, entry] : commands())
    text += "  " + name + std::string(width + 2 - name.size(), ' ') + entry.summary + "\n";
  text += "\n" + tl::cli::operatorsHelp() + "\n" + tl::cli::sourcesHelp();
  text += "\nexit status: 0 success, 1 file or runtime error, 2 usage error (bad option, value, shape or NaN/Inf input)\n";
  return text;
}

// One line, whatever the message holds.
void reportError(std::string message) {
  for (char& c : message)
    if (c == '\n' || c == '\r') c = ' ';
  std::cerr << "tlens: error: " << message << std::endl;
}

int dispatch(const tl::cli::Args& args) {
  if (args.empty()) {
    std::cerr << mainHelp();
    return 2;
  }
  if (args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    std::cout << mainHelp();
    return 0;
  }
  const auto it = commands().find(args[0]);
  if (it == commands().end()) {
    std::string known;
    for (const auto& entry : commands()) known += (known.empty() ? "" : ", ") + entry.first;
    throw tl::InvalidArgument("unknown command '" + args[0] + "' (commands: " + known + "; see 'tlens --help')");
  }
  return it->second.run(tl::cli::Args(args.begin() + 1, args.end()));
}

}  // namespace

int main(int argc, char** argv) {
  // Before any thread: n × n buffers, all allocated on this thread, reuse their pages (common/large_buffers.h).
  tl::keepFreedBuffers(tl::LargeBufferThreads::Main);
#ifdef TL_WITH_TORCH
  tl::installVitModelBackend();  // model sources (--source model:...) and checkpoint sessions
#endif
  try {
    return dispatch(tl::cli::Args(argv + 1, argv + argc));
  } catch (const tl::InvalidArgument& e) {
    reportError(e.what());
    return 2;
  } catch (const tl::Error& e) {  // FileError, ResourceError, Canceled and the rest
    reportError(e.what());
    return 1;
  } catch (const std::bad_alloc&) {
    reportError("out of memory (try a smaller n)");
    return 1;
  } catch (const std::exception& e) {
    reportError(std::string("unexpected failure: ") + e.what());
    return 1;
  } catch (...) {
    reportError("unexpected failure");
    return 1;
  }
}
