#include "model/training/training_record.h"

#include "common/errors.h"

namespace tl {
namespace {

// The options that decide what a run computes, by their JSON (and CLI) names. threads, out and resume are
// left out: they say where and how fast, not what.
nlohmann::json definingOptions(const TrainingOptions& o) {
  return {{"attention", o.attention},
          {"dim", o.dim},
          {"depth", o.depth},
          {"heads", o.heads},
          {"mlp", o.mlp},
          {"patch", o.patch},
          {"epochs", o.epochs},
          {"batch", o.batch},
          {"lr", o.lr},
          {"weight_decay", o.weightDecay},
          {"label_smoothing", o.labelSmoothing},
          {"warmup", o.warmup},
          {"sort_anneal", o.sortAnneal},
          {"augment", o.augment},
          {"seed", o.seed},
          {"limit_train", o.limitTrain},
          {"limit_test", o.limitTest},
          {"init", o.init}};
}

template <class T>
void read(const nlohmann::json& j, const char* name, T& into, const std::string& source) {
  try {
    into = j.at(name).get<T>();
  } catch (const nlohmann::json::exception&) {
    throw FileError(source + ": field '" + name + "' is missing or has the wrong type");
  }
}

}  // namespace

nlohmann::json toJson(const TrainingOptions& o) {
  nlohmann::json j = definingOptions(o);
  j["threads"] = o.threads;
  return j;
}

nlohmann::json toJson(const EpochMetrics& m) {
  return {{"epoch", m.epoch},         {"train_loss", m.trainLoss}, {"train_accuracy", m.trainAccuracy},
          {"test_accuracy", m.testAccuracy}, {"seconds", m.seconds}, {"eval_seconds", m.evalSeconds},
          {"lr", m.lr},               {"sort_temp", m.sortTemp}};
}

TrainingOptions trainingOptionsFromJson(const nlohmann::json& j, const std::string& source) {
  TrainingOptions o;
  read(j, "attention", o.attention, source);
  read(j, "dim", o.dim, source);
  read(j, "depth", o.depth, source);
  read(j, "heads", o.heads, source);
  read(j, "mlp", o.mlp, source);
  read(j, "patch", o.patch, source);
  read(j, "epochs", o.epochs, source);
  read(j, "batch", o.batch, source);
  read(j, "lr", o.lr, source);
  read(j, "weight_decay", o.weightDecay, source);
  read(j, "label_smoothing", o.labelSmoothing, source);
  read(j, "warmup", o.warmup, source);
  read(j, "sort_anneal", o.sortAnneal, source);
  read(j, "augment", o.augment, source);
  read(j, "seed", o.seed, source);
  read(j, "limit_train", o.limitTrain, source);
  read(j, "limit_test", o.limitTest, source);
  read(j, "threads", o.threads, source);
  if (j.contains("init")) read(j, "init", o.init, source);  // absent in runs stored before fine-tuning existed
  return o;
}

EpochMetrics epochMetricsFromJson(const nlohmann::json& j, const std::string& source) {
  EpochMetrics m;
  read(j, "epoch", m.epoch, source);
  read(j, "train_loss", m.trainLoss, source);
  read(j, "train_accuracy", m.trainAccuracy, source);
  read(j, "test_accuracy", m.testAccuracy, source);
  read(j, "seconds", m.seconds, source);
  read(j, "eval_seconds", m.evalSeconds, source);
  read(j, "lr", m.lr, source);
  read(j, "sort_temp", m.sortTemp, source);
  return m;
}

std::vector<std::string> differingTrainingOptions(const TrainingOptions& a, const TrainingOptions& b) {
  const nlohmann::json ja = definingOptions(a), jb = definingOptions(b);
  std::vector<std::string> names;
  for (const auto& [name, value] : ja.items())
    if (value != jb.at(name)) names.push_back(name);
  return names;
}

std::string trainingReportJson(const TrainingReport& r) {
  nlohmann::json epochs = nlohmann::json::array();
  for (const auto& m : r.history) epochs.push_back(toJson(m));
  nlohmann::json j = {{"attention", r.attention},     {"options", toJson(r.options)},
                      {"parameters", r.parameters},   {"train_images", r.trainImages},
                      {"test_images", r.testImages},  {"epochs", epochs},
                      {"completed_epochs", int(r.history.size())}, {"stopped", r.stopped}};
  if (r.stopped) j["stopped_at"] = {{"epoch", r.stoppedInEpoch}, {"step", r.stoppedAtStep}};
  if (!r.history.empty()) j["final_test_accuracy"] = r.history.back().testAccuracy;
  return j.dump(2) + "\n";
}

}  // namespace tl
