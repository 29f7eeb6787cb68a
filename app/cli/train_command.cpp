// `tlens train`: trains a ViT on Fashion-MNIST on the CPU (core/model/training_run.h) and writes a
// resumable checkpoint after every epoch. LibTorch stays behind the plain header; without TL_TORCH the
// command checks its flags and then says it cannot train.
#include <cstdio>
#include <iostream>
#include <sstream>

#include "arguments.h"
#include "commands.h"
#include "common/errors.h"
#include "io/atomic_file.h"
#include "model/training/training_run.h"
#include "ops/registry.h"
#include "terminal_progress.h"

namespace tl::cli {
namespace {

CommandLine trainCommandLine() {
  const TrainingOptions d;
  auto withDefault = [](const std::string& help, const auto& value) {
    std::ostringstream text;
    text << help << " (default " << value << ")";
    return text.str();
  };
  return CommandLine(
      "train",
      "Train a Vision Transformer on Fashion-MNIST on the CPU; checkpoint (config.json, model.safetensors, "
      "training_state/) after every epoch. Ctrl-C stops at the next step and keeps the last complete epoch "
      "(exit status 130); --resume continues it. Runs are reproducible for a given --seed and --threads.",
      {{"attention", "SPEC", withDefault("attention normaliser: softmax, sinkhorn, esp or lot with parameters, "
                                         "e.g. \"sinkhorn:T=5,eps=1\", \"lot:r=8\"", d.attention)},
       {"epochs", "N", withDefault("epochs", d.epochs)},
       {"batch", "B", withDefault("mini-batch size", d.batch)},
       {"lr", "X", withDefault("peak AdamW learning rate (linear warm-up, then cosine decay to 0)", d.lr)},
       {"weight-decay", "X", withDefault("AdamW decoupled weight decay on the weight matrices", d.weightDecay)},
       {"label-smoothing", "X", withDefault("cross-entropy label smoothing", d.labelSmoothing)},
       {"warmup", "F", withDefault("fraction of all steps spent warming the learning rate up", d.warmup)},
       {"sort-anneal", "G", withDefault("esp: epoch e trains SoftSort at sort_temp·G^e; evaluation sorts hard",
                                        d.sortAnneal)},
       {"init", "CKPT", "fine-tune: start from this checkpoint's weights (folder or weights file) with the "
                        "--attention normaliser; the architecture is the checkpoint's"},
       {"no-augment", "", "train without random 2-px-padded crops and horizontal flips"},
       {"seed", "S", withDefault("seed of the initial weights, the shuffles and the augmentation", d.seed)},
       {"dim", "D", withDefault("hidden size", d.dim)},
       {"depth", "L", withDefault("number of transformer blocks", d.depth)},
       {"heads", "H", withDefault("attention heads (head dim = D/H)", d.heads)},
       {"mlp", "M", withDefault("MLP hidden size", d.mlp)},
       {"patch", "P", withDefault("patch size in pixels; divides 28", d.patch)},
       {"threads", "N", withDefault("LibTorch threads; more help only on idle cores, and the weights depend on "
                                    "the count in their last bits", d.threads)},
       {"limit-train", "N", "train on the first N training images (default all 60000)"},
       {"limit-test", "N", "evaluate on the first N test images (default all 10000)"},
       {"out", "DIR", "checkpoint folder (created if missing; must not hold a model unless --resume)"},
       {"resume", "", "continue the run in --out from its last complete epoch, with its stored options"},
       {"json", "FILE", "write the final metrics (per-epoch loss, accuracies, seconds, parameter count) as JSON"}});
}

// The flags given on the command line, over `options` (the defaults, or the stored run's for --resume).
void applyFlags(const CommandLine& cl, TrainingOptions& o) {
  auto positive = [&](const char* name, int& into) {
    if (const auto v = cl.get(name)) into = parsePositiveInt(name, *v);
  };
  auto real = [&](const char* name, double& into) {
    if (const auto v = cl.get(name)) into = parseReal(name, *v);
  };
  if (const auto v = cl.get("attention")) o.attention = OperatorRegistry::builtin().parse(*v).toString();
  positive("epochs", o.epochs);
  positive("batch", o.batch);
  real("lr", o.lr);
  real("weight-decay", o.weightDecay);
  real("label-smoothing", o.labelSmoothing);
  real("warmup", o.warmup);
  real("sort-anneal", o.sortAnneal);
  if (cl.has("no-augment")) o.augment = false;
  if (const auto v = cl.get("seed")) o.seed = parseUnsigned("seed", *v);
  positive("dim", o.dim);
  positive("depth", o.depth);
  positive("heads", o.heads);
  positive("mlp", o.mlp);
  positive("patch", o.patch);
  positive("threads", o.threads);
  positive("limit-train", o.limitTrain);
  positive("limit-test", o.limitTest);
  o.out = cl.required("out");
  o.resume = cl.has("resume");
  if (const auto v = cl.get("init")) {
    if (o.resume) throw InvalidArgument("--init starts a new run from a checkpoint and --resume continues one; give one");
    for (const char* name : {"dim", "depth", "heads", "mlp", "patch"})
      if (cl.has(name))
        throw InvalidArgument(std::string("--") + name + " cannot be combined with --init: a fine-tuning run keeps the "
                         "architecture of the checkpoint it starts from");
    o.init = *v;
  }
}

#ifdef TL_WITH_TORCH
// Exit status of a run stopped by Ctrl-C: the shell convention 128 + SIGINT, so scripts see an interrupt.
constexpr int kInterrupted = 130;

// The line every finished epoch leaves on stderr (on a terminal, below the status line of the steps).
void printEpochSummary(const EpochMetrics& m, int epochs) {
  std::fprintf(stderr, "epoch %d/%d  loss %.4f  train %.2f%%  test %.2f%%  %.1f s (+%.1f s eval)", m.epoch, epochs,
               m.trainLoss, 100 * m.trainAccuracy, 100 * m.testAccuracy, m.seconds, m.evalSeconds);
  if (m.sortTemp > 0) std::fprintf(stderr, "  sort_temp %.3g", m.sortTemp);
  std::fprintf(stderr, "\n");
  std::fflush(stderr);
}

// `trainedNow`: epochs completed by this invocation (a resumed run's history also holds the earlier ones).
int reportOutcome(const TrainingReport& report, int trainedNow) {
  const TrainingOptions& o = report.options;
  const int completed = int(report.history.size());
  if (report.stopped) {
    std::cerr << "stopped in epoch " << report.stoppedInEpoch << " at step " << report.stoppedAtStep << "; ";
    if (completed == 0)
      std::cerr << "no epoch was complete, so nothing was saved\n";
    else
      std::cerr << o.out << " keeps the checkpoint of epoch " << completed << " (continue with: tlens train --out "
                << o.out << " --resume)\n";
    return kInterrupted;
  }
  if (trainedNow == 0) {
    std::cout << o.out << ": all " << o.epochs << " epochs were already trained; nothing to do\n";
    return 0;
  }
  std::printf("trained %s (%lld parameters) for %d epochs on %d images: test accuracy %.2f%% on %d images; "
              "checkpoint in %s\n",
              report.attention.c_str(), static_cast<long long>(report.parameters), completed, report.trainImages,
              100 * report.history.back().testAccuracy, report.testImages, o.out.c_str());
  return 0;
}

int train(const CommandLine& cl, TrainingOptions options) {
  if (options.resume) {
    const TrainingOptions stored = storedTrainingOptions(options.out);
    options = stored;
    applyFlags(cl, options);
    if (options.threads != stored.threads)
      std::cerr << "note: resuming with " << options.threads << " threads where the run used " << stored.threads
                << "; the weights may differ from an uninterrupted run in the last bits\n";
  }
  // The status line of the steps (on a terminal) comes from the run's Feedback; Ctrl-C cancels it.
  TerminalProgress progress;
  int trainedNow = 0;
  TrainingListener listener;
  listener.onEpoch = [&](const EpochMetrics& m) {
    progress.clearLine();
    printEpochSummary(m, options.epochs);
    ++trainedNow;
  };
  TrainingReport report;
  {
    InterruptScope interrupts(progress.feedback());
    report = trainVitOnFashionMnist(options, listener, progress.feedback());
  }  // on an error, ~TerminalProgress ends the status line so that main()'s message has a line of its own
  progress.clearLine();
  if (const auto json = cl.get("json")) writeFileAtomically(*json, trainingReportJson(report));
  return reportOutcome(report, trainedNow);
}
#endif

}  // namespace

int trainCommand(const Args& args) {
  CommandLine cl = trainCommandLine();
  cl.parse(args);
  if (cl.helpRequested()) {
    std::cout << cl.usage() << "\n" << operatorsHelp();
    return 0;
  }
  TrainingOptions options;
  applyFlags(cl, options);  // usage errors first, with or without LibTorch
#ifdef TL_WITH_TORCH
  return train(cl, options);
#else
  throw Error("this tlens was built without LibTorch (TL_TORCH=OFF), so it cannot train; rebuild with -DTL_TORCH=ON");
#endif
}

}  // namespace tl::cli
