#pragma once
// Training a ViT on Fashion-MNIST on the CPU, behind plain std types so `tlens train` (and later the GUI)
// include it without LibTorch. One run (from random weights, or fine-tuning a checkpoint under another
// normaliser, as ESPFormer adapts pretrained ViTs): AdamW with a linear warm-up then cosine decay, cross-entropy,
// seeded shuffling and augmentation, ESP's SoftSort with per-epoch annealing while training and hard sorting
// when evaluating, test accuracy after every epoch, and a resumable checkpoint after every complete epoch:
//   OUT/config.json, OUT/model.safetensors   the model (writeVitCheckpoint), loadable by readVitCheckpoint
//   OUT/training_state/state.json            options, completed epochs, step, RNG scheme, metrics history
//   OUT/training_state/optimizer.pt          AdamW moments (torch::save archive)
// Runs are deterministic for a given seed AND thread count: LibTorch splits reductions and matrix products
// by thread, so a different thread count changes the last bits of the weights.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/feedback.h"

namespace tl {

struct TrainingOptions {
  std::string attention = "softmax";  // registry operator string, e.g. "sinkhorn:T=5,eps=1"
  // Model: 28×28 greyscale images cut into patch×patch patches, plus [CLS].
  int dim = 64, depth = 6, heads = 4, mlp = 128, patch = 4;
  // Optimisation.
  int epochs = 10, batch = 128;
  double lr = 1e-3, weightDecay = 0.05, labelSmoothing = 0.0;
  double warmup = 0.05;      // fraction of all steps spent ramping the learning rate up linearly
  double sortAnneal = 0.8;   // ESP: epoch e trains with sort_temp·sortAnneal^e (docs/operators/esp.md#training)
  bool augment = true;       // random 2-px-padded crops and horizontal flips
  uint64_t seed = 0;
  // LibTorch intra-op threads (0 = every hardware thread). One by default: on a machine whose cores are
  // busy with other work, LibTorch's OpenMP threads spin at every barrier and 2 threads measured 5–10× slower
  // than 1 on the project's shared 2-core machines; raise it on idle cores.
  int threads = 1;
  int limitTrain = 0, limitTest = 0;  // first N images of each split; 0 = all
  // Fine-tuning: a checkpoint whose weights the run starts from (any format readVitCheckpoint reads). Its
  // architecture replaces dim, depth, heads, mlp and patch; tensors of its normaliser that the new one lacks
  // are dropped, and the new normaliser's own (LOT pivots) start fresh. Empty: random initial weights.
  std::string init;
  std::string out;           // checkpoint folder
  bool resume = false;       // continue the run stored in `out` (its stored options win; see storedTrainingOptions)
};

// One training step's view of the run, for progress bars.
struct TrainingProgress {
  int epoch = 0, epochs = 0;  // epoch being trained, 1-based
  int step = 0, steps = 0;    // steps done in this epoch, steps per epoch
  double stepLoss = 0;        // this step's mini-batch loss
  double loss = 0, accuracy = 0;  // running means over this epoch so far (training batches, augmented)
  double imagesPerSecond = 0;     // training throughput since this process started training
  double etaSeconds = 0;          // remaining training steps at that throughput (evaluation not counted)
  double lr = 0;
};

// One step's progress in words, as the run reports it through Feedback::setProgress (the fraction there is
// of all steps of the run): "epoch 2/10  step 40/469  loss 0.4123  acc 85.2%  1234 img/s  ETA 3m12s".
std::string describeTrainingProgress(const TrainingProgress& p);

struct EpochMetrics {
  int epoch = 0;  // 1-based
  double trainLoss = 0, trainAccuracy = 0;  // means over the epoch's (augmented) training batches
  double testAccuracy = 0;                  // eval mode; ESP sorts hard here
  double seconds = 0;                       // training time of the epoch (evaluation excluded)
  double evalSeconds = 0;
  double lr = 0;        // learning rate of the epoch's last step
  double sortTemp = 0;  // ESP SoftSort temperature the epoch trained with (0 for other families)
};

struct TrainingReport {
  TrainingOptions options;            // as run (threads resolved)
  std::string attention;              // resolved operator string
  int64_t parameters = 0;
  int trainImages = 0, testImages = 0;
  std::vector<EpochMetrics> history;  // every completed epoch, including those before a resume
  bool stopped = false;               // cancelled; the checkpoint holds the last complete epoch
  int stoppedInEpoch = 0, stoppedAtStep = 0;
};

struct TrainingListener {
  std::function<void(const TrainingProgress&)> onStep;
  std::function<void(const EpochMetrics&)> onEpoch;  // after the epoch's checkpoint is written
};

// Trains per `options` (resuming from options.out when options.resume). Cancelling `feedback` (checked
// between steps, e.g. from a SIGINT handler) stops at the next step and returns with stopped = true; the
// partial epoch is discarded and the last complete checkpoint stays. Progress goes to `feedback` after
// every step (describeTrainingProgress) and during each epoch's evaluation ("epoch 2/10  evaluating image
// 500/10000"), and to `listener`. InvalidArgument for bad options
// (operator string, sizes), FileError for missing data or an unreadable/inconsistent checkpoint.
TrainingReport trainVitOnFashionMnist(const TrainingOptions& options, const TrainingListener& listener = {},
                                      Feedback& feedback = noFeedback());

// The options stored by the run in `dir` (for --resume), with resume = true and out = dir. FileError when
// `dir` holds no training state.
TrainingOptions storedTrainingOptions(const std::string& dir);

// Names of the options that differ between two runs' settings (empty when they would train identically;
// threads is not compared, out and resume neither).
std::vector<std::string> differingTrainingOptions(const TrainingOptions& a, const TrainingOptions& b);

// The report as JSON text: options, parameter count, per-epoch loss, train/test accuracy and seconds.
std::string trainingReportJson(const TrainingReport& report);

}  // namespace tl
