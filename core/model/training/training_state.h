#pragma once
// What `--resume` needs besides the model files, in OUT/training_state/:
//   state.json    options, completed epochs, optimiser step, the RNG scheme, metrics history, and a hash of
//                 model.safetensors and optimizer.pt, so a resume never mixes files of different epochs;
//   optimizer.pt  the AdamW state as a torch::save archive (bytes made and read in model/ torch code).
// The random streams need no saved state: epoch e shuffles and augments from a generator seeded by
// (seed, e) alone (epochRandomSeed), and LibTorch's generator is only used to initialise the model.
// Each file is written atomically and state.json last, so the folder always describes a complete epoch or
// is detectably inconsistent. No LibTorch here.
#include <cstdint>
#include <string>
#include <vector>

#include "model/training/training_run.h"

namespace tl {

struct TrainingState {
  TrainingOptions options;
  int completedEpochs = 0;
  int64_t step = 0;  // optimiser steps taken
  std::vector<EpochMetrics> history;
};

// The seed of epoch e's shuffle and augmentation stream (SeededRandom).
uint64_t epochRandomSeed(uint64_t seed, int epoch);

bool hasTrainingState(const std::string& out);

// Writes optimizer.pt, then state.json with the hashes of OUT/model.safetensors (already written) and of
// `optimizerBytes`. FileError naming the file on failure.
void writeTrainingState(const std::string& out, const TrainingState& state, const std::string& optimizerBytes);

struct StoredTraining {
  TrainingState state;
  std::string optimizerBytes;
};

// FileError when OUT holds no training state, a file is unreadable, or the hashes show that the model and
// the optimiser state are not from the epoch state.json describes.
StoredTraining readTrainingState(const std::string& out);

}  // namespace tl
