#include "session/engine.h"

#include <algorithm>

#include <chrono>
#include <filesystem>

#include "common/errors.h"
#include "common/large_buffers.h"
#include "ops/sinkhorn/sinkhorn.h"
#include "session/backend_choice.h"

namespace tl {

std::vector<PlanResult<double>> runOperatorBatch(const Operator& op, const AttentionBatch<double>& heads,
                                                 Precision precision, DeviceChoice device, Feedback& feedback) {
  const BackendChoice choice = chooseBackend(op, device);
  std::vector<PlanResult<double>> results;
  if (choice.backend == Backend::Cuda) {  // float32 on the device, one launch; plans stay there until asked for
    AttentionBatch<float> narrow;
    for (const auto& h : heads) narrow.push_back(h.cast<float>());
    for (const auto& r : op.runCuda(narrow, DeviceRequest{}, feedback)) results.push_back(r.cast<double>());
  } else {
    for (const auto& h : heads)
      results.push_back(precision == Precision::F64 ? op.run(h, feedback) : op.run(h.cast<float>(), feedback).cast<double>());
  }
  for (auto& r : results) r.backendNote = choice.note;
  return results;
}

PlanResult<double> runOperator(const OperatorSpec& spec, const AttentionInput<double>& input, Precision precision,
                               DeviceChoice device, Feedback& feedback) {
  const auto op = OperatorRegistry::builtin().create(spec);
  return runOperatorBatch(*op, {input}, precision, device, feedback).front();
}

namespace {

// The primary operator: a Sinkhorn run on the CPU goes through the live cache, which gives the same result bit
// for bit while reusing the scores and the loop of the previous request; anything else runs as runOperator.
PlanResult<double> runPrimary(const OperatorSpec& spec, const std::shared_ptr<const AttentionInput<double>>& input,
                              const Session& session, Feedback& feedback, LiveCache* cache) {
  const auto op = OperatorRegistry::builtin().create(spec);
  const BackendChoice choice = chooseBackend(*op, session.device);
  if (!cache || spec.family != "sinkhorn" || choice.backend != Backend::Cpu)
    return runOperatorBatch(*op, {*input}, session.precision, session.device, feedback).front();
  const SinkhornParams params = SinkhornParams::from(spec.params);
  PlanResult<double> r;
  if (session.precision == Precision::F64) {
    cache->f64.bindTo(input);
    r = sinkhornAttention(*input, params, feedback, &cache->f64);
  } else {
    cache->f32.bindTo(input);
    r = sinkhornAttention(input->cast<float>(), params, feedback, &cache->f32).cast<double>();
  }
  r.backendNote = choice.note;
  return r;
}

void analyseComparison(SessionResult& r, Feedback& feedback) {
  const double roundoff = unitRoundoff(r.session.precision);
  for (size_t i = 0; i < r.runs.size(); ++i) {
    feedback.throwIfCanceled();
    feedback.setProgress(1.0, "analysis");
    OperatorRun& run = r.runs[i];
    run.analysis = analyzePlan(run.result, roundoff);
    if (i == 0) continue;
    try {
      run.toFirst = comparePlans(run.result, r.runs.front().result);
    } catch (const InvalidArgument&) {
      // Shapes differ (e.g. a dustbin row): no distances, and the view says so with "—".
    }
  }
}

// The model again with the primary operator in place of its normaliser where the session's scope says.
void swapIntoModel(SessionResult& r, Feedback& feedback) {
  const ModelSourceSpec& source = r.session.source.model;
  r.swappedLayers =
      swappedLayers(r.session.swapScope, source.layer, int(r.model->trace.layers.size()), r.session.swapLayers);
  if (r.swappedLayers.empty()) return;
  std::map<int, OperatorSpec> swaps;
  for (int layer : r.swappedLayers) swaps[layer] = r.session.operators.front();
  feedback.setProgress(1.0, "model with the operator swapped in");
  r.swapped = modelBackend().rerun(*r.model, r.swappedLayers.front(), swaps, feedback, r.session.device);
}

// An operator that reads one layer of a compiled model (asap:compiled=DIR) and leaves `layer` at −1 ("the layer
// it is swapped into") runs on a model source's head as the layer that head comes from.
OperatorSpec atSourceLayer(const OperatorSpec& spec, const SessionResult& r) {
  if (!r.model) return spec;
  OperatorSpec resolved = OperatorRegistry::builtin().resolve(spec.family, spec.params);
  const auto it = resolved.params.find("layer");
  if (it != resolved.params.end() && it->second == ParamValue(-1LL))
    it->second = ParamValue((long long)r.session.source.model.layer);
  return resolved;
}

// Files may change on disk between requests; their modification times are part of the cache key.
std::string sourceKey(const SourceSpec& s) {
  std::string key = s.toString();
  auto stamp = [&](const std::string& path) {
    std::error_code ec;
    if (!path.empty()) key += "|" + std::to_string(std::filesystem::last_write_time(path, ec).time_since_epoch().count());
  };
  if (s.kind == SourceSpec::Kind::Files)
    for (const auto* path : {&s.q, &s.k, &s.v, &s.mask}) stamp(*path);
  if (s.kind == SourceSpec::Kind::Model) stamp(s.model.checkpoint);
  return key;
}

// The Certificates view's report for a banded primary operator, reusing `cache` when only eps or the step
// counts changed.
std::shared_ptr<const BandedCertificateReport> certificatesFor(const Session& session, const AttentionInput<double>& input,
                                                               ContractionCache* cache, Feedback& feedback) {
  const BandedParams p = BandedParams::from(session.operators.front().params);
  const std::string key = sourceKey(session.source) + "|W=" + std::to_string(p.W) + "|tile=" + std::to_string(p.tile) +
                          "|dustbin=" + std::to_string(p.dustbin);
  const bool reuse = cache && cache->value && cache->key == key;
  auto report = std::make_shared<const BandedCertificateReport>(
      bandedCertificateReport(input, p, reuse ? cache->value : nullptr, feedback));
  if (cache) *cache = {key, report->contraction};
  return report;
}

SessionResult runOn(const Session& session, const LoadedSource& source, Feedback& feedback,
                    const RunOptions& options = {}, ContractionCache* contractionCache = nullptr,
                    LiveCache* liveCache = nullptr) {
  SessionResult r;
  r.session = session;
  r.input = source.input;
  r.model = source.model;
  const size_t count = session.operators.size();
  for (size_t i = 0; i < count; ++i) {
    feedback.throwIfCanceled();
    feedback.setProgress(double(i) / double(count), session.operators[i].family);
    OperatorRun run;
    run.spec = session.operators[i];
    const OperatorSpec spec = atSourceLayer(run.spec, r);
    run.result = i == 0 ? runPrimary(spec, r.input, session, feedback, liveCache)
                        : runOperator(spec, *r.input, session.precision, session.device, feedback);
    r.runs.push_back(std::move(run));
  }
  if (count > 1) analyseComparison(r, feedback);
  // The Certificates view follows every banded run (the GUI shows all views; tlens render may select it).
  if (count > 0 && session.operators.front().family == "banded") {
    if (options.certificates) {
      feedback.setProgress(1.0, "banded certificates");
      r.certificates = certificatesFor(session, *r.input, contractionCache, feedback);
    } else {
      r.certificatesSkipped = true;
    }
  }
  if (r.model) swapIntoModel(r, feedback);
  if (std::find(session.views.begin(), session.views.end(), "rank_decay") != session.views.end()) {
    Feedback part(feedback, [&](double f, const std::string& stage) { feedback.setProgress(f, "rank decay: " + stage); });
    r.rankDecay = std::make_shared<const std::vector<rankdecay::RankDecayResult>>(
        rankdecay::runRankDecaySettings(session.rankDecay, session.operators, part));
  }
  feedback.setProgress(1.0, "done");
  return r;
}

}  // namespace

SessionResult runSession(const Session& session, Feedback& feedback) {
  const auto start = std::chrono::steady_clock::now();
  SessionResult r = runOn(session, loadSource(session.source, feedback), feedback);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

Engine::Engine(ResultFn onResult, ErrorFn onError, ProgressFn onProgress)
    : onResult_(std::move(onResult)), onError_(std::move(onError)), onProgress_(std::move(onProgress)),
      worker_([this] { workerLoop(); }) {}

Engine::~Engine() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    pending_.reset();
    if (running_) running_->cancel();
  }
  wake_.notify_all();
  worker_.join();
}

uint64_t Engine::submit(const Session& session, const RunOptions& options) {
  std::lock_guard<std::mutex> lock(mutex_);
  const uint64_t id = nextId_++;
  latestId_ = id;
  pending_ = Request{id, session, options};
  if (running_) running_->cancel();  // the newest parameters win
  wake_.notify_one();
  return id;
}

void Engine::cancelAll() {
  std::lock_guard<std::mutex> lock(mutex_);
  pending_.reset();
  latestId_ = nextId_++;  // nothing submitted so far is current any more
  if (running_) running_->cancel();
}

bool Engine::busy() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return working_ || pending_.has_value();
}

LoadedSource Engine::inputFor(const SourceSpec& source, Feedback& feedback) {
  const std::string key = sourceKey(source);
  if (cachedInput_.input && key == cachedSourceKey_) return cachedInput_;
  cachedInput_ = loadSource(source, feedback);
  cachedSourceKey_ = key;
  releaseKeptBuffers();  // the old tokens' buffers are free now, and their sizes will not come back
  return cachedInput_;
}

void Engine::workerLoop() {
  for (;;) {
    uint64_t id;
    Session session;
    RunOptions options;
    std::shared_ptr<Feedback> feedback;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [this] { return stopping_ || pending_.has_value(); });
      if (stopping_) return;
      id = pending_->id;
      session = std::move(pending_->session);
      options = pending_->options;
      pending_.reset();
      feedback = std::make_shared<Feedback>([this, id](double f, const std::string& stage) {
        if (onProgress_) onProgress_(id, f, stage);
      });
      running_ = feedback;
      working_ = true;
    }
    auto isCurrent = [this, id] {
      std::lock_guard<std::mutex> lock(mutex_);
      return id == latestId_;
    };
    try {
      const auto start = std::chrono::steady_clock::now();
      auto result = std::make_shared<SessionResult>(
          runOn(session, inputFor(session.source, *feedback), *feedback, options, &contractionCache_, &liveCache_));
      result->requestId = id;
      result->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (isCurrent()) onResult_(std::move(result));
    } catch (const Canceled&) {
      // Superseded or cancelled: nobody waits for this result.
    } catch (const std::bad_alloc&) {
      if (isCurrent()) onError_(id, "out of memory while computing; reduce n");
    } catch (const std::exception& e) {
      if (isCurrent()) onError_(id, e.what());
    }
    std::lock_guard<std::mutex> lock(mutex_);
    running_.reset();
    working_ = false;
  }
}

}  // namespace tl
