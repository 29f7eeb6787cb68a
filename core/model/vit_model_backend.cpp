#include "model/vit_model_backend.h"

#include <filesystem>
#include <list>
#include <mutex>

#include "model/asap_compiler.h"
#include "model/rank_decay_checkpoint.h"
#include "model/torchscript.h"
#include "model/vit_inference.h"
#include "vit/model_backend.h"

namespace tl {
namespace {

// A checkpoint is the same while its path and modification time are: a re-trained folder reloads.
std::string checkpointKey(const std::string& path) {
  std::error_code ec;
  return path + "|" + std::to_string(std::filesystem::last_write_time(path, ec).time_since_epoch().count());
}

class VitModelBackend : public ModelBackend {
 public:
  std::shared_ptr<const ModelRun> run(const ModelSourceSpec& source, Feedback& feedback) override {
    std::lock_guard<std::mutex> lock(mutex_);
    const std::string key = checkpointKey(source.checkpoint) + "|" + source.image.toString();
    for (const auto& [cachedKey, cachedRun] : runs_)
      if (cachedKey == key) return cachedRun;
    const VitRunner& runner = runnerFor(source.checkpoint, feedback);
    auto run = std::make_shared<ModelRun>();
    run->checkpoint = source.checkpoint;
    run->config = runner.config();
    run->image = loadModelImage(source.image, run->config);
    run->trace = runner.run(run->image.pixels, feedback);
    runs_.emplace_front(key, run);
    if (runs_.size() > kRunsKept) runs_.pop_back();
    return run;
  }

  VitTrace rerun(const ModelRun& base, int fromLayer, const std::map<int, OperatorSpec>& swaps, Feedback& feedback,
                 DeviceChoice device) override {
    std::lock_guard<std::mutex> lock(mutex_);
    return runnerFor(base.checkpoint, feedback).rerun(base.trace, fromLayer, swaps, feedback, device);
  }

  // A runner of its own: a calibration takes minutes and must not hold the lock the views' runs need.
  CompiledAsap compileAsap(const std::string& checkpoint, const AsapCompileOptions& options,
                           Feedback& feedback) override {
    return tl::compileAsap(VitRunner::open(checkpoint, {}, feedback), checkpoint, options, feedback);
  }

 private:
  static constexpr size_t kRunsKept = 16;  // an image strip's worth: flipping back is instant

  const VitRunner& runnerFor(const std::string& checkpoint, Feedback& feedback) {
    const std::string key = checkpointKey(checkpoint);
    if (!runner_ || runnerKey_ != key) {
      runner_ = std::make_unique<VitRunner>(VitRunner::open(checkpoint, {}, feedback));
      runnerKey_ = key;
      runs_.clear();
    }
    return *runner_;
  }

  std::mutex mutex_;
  std::unique_ptr<VitRunner> runner_;
  std::string runnerKey_;
  std::list<std::pair<std::string, std::shared_ptr<const ModelRun>>> runs_;
};

}  // namespace

void installVitModelBackend() {
  useLibTorchForTorchScript();
  installModelBackend(std::make_shared<VitModelBackend>());
  rankdecay::installModelRecorder(recordCheckpoint);  // model: sources of `tlens rank-decay` and the view
}

}  // namespace tl
