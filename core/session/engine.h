#pragma once
// Runs a Session into results: loads the source, runs each operator in the session's precision, and
// returns double-precision results for views. `Engine` does it on its own worker thread; a newer request
// supersedes an older one (the running one is cancelled, a pending one dropped), so sliders stay live.
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "analysis/summary.h"
#include "common/feedback.h"
#include "ops/banded/banded_certificates.h"
#include "ops/sinkhorn/sinkhorn_cache.h"
#include "rankdecay/experiment.h"
#include "session/session.h"
#include "session/source_loader.h"

namespace tl {

struct OperatorRun {
  OperatorSpec spec;
  PlanResult<double> result;  // computed in the session's precision, widened for display and analysis
  // Compare sessions (two or more operators) also analyse every plan and compare it with the first, here
  // on the worker thread: the SVD behind the rank costs as much as the operator at large n.
  std::optional<PlanAnalysis> analysis;
  std::optional<PlanComparison> toFirst;  // runs after the first; empty when the shapes differ
};

struct SessionResult {
  uint64_t requestId = 0;
  Session session;
  std::shared_ptr<const AttentionInput<double>> input;
  std::vector<OperatorRun> runs;
  // Model sources: the checkpoint's own run, and the same run with operators[0] in place of its normaliser
  // at `swappedLayers` (session.swapScope; empty for none).
  std::shared_ptr<const ModelRun> model;
  std::optional<VitTrace> swapped;
  std::vector<int> swappedLayers;
  // The Certificates view's numbers, computed here on the worker thread when the primary operator is banded,
  // unless the request left them out (RunOptions::certificates): then certificatesSkipped.
  std::shared_ptr<const BandedCertificateReport> certificates;
  bool certificatesSkipped = false;
  // The Rank decay view's curves, one result per configuration of session.rankDecay; computed only when the
  // session shows that view.
  std::shared_ptr<const std::vector<rankdecay::RankDecayResult>> rankDecay;
  double seconds = 0;  // source + all operators
};

// What a request computes beyond the session's operators. A window leaves out the analyses of views that are not
// on screen: the banded certificates (the live bias certificate's float64 pullbacks) took about 90 of the 100 ms
// of a W move at n = 4096 while their tab sat behind the Banded view's.
struct RunOptions {
  bool certificates = true;  // the Certificates view's report, for a banded primary operator
};

// Synchronous: what the CLI and tests call. Throws tl::Error on failure, Canceled when canceled.
SessionResult runSession(const Session& session, Feedback& feedback = noFeedback());
// Runs one operator on an input in the requested precision on the backend `device` selects
// (session/backend_choice.h; the GPU computes in float32). The result says which backend ran and, when the
// CPU ran although the GPU was asked for, why.
PlanResult<double> runOperator(const OperatorSpec& spec, const AttentionInput<double>& input, Precision precision,
                               DeviceChoice device = DeviceChoice::Cpu, Feedback& feedback = noFeedback());
// The heads of one layer (a model's swap path): on the GPU in one launch (batch = heads), on the CPU one by one.
std::vector<PlanResult<double>> runOperatorBatch(const Operator& op, const AttentionBatch<double>& heads,
                                                 Precision precision, DeviceChoice device,
                                                 Feedback& feedback = noFeedback());

// The last contraction certificates (banded): they depend on the input, W, tile and dustbin only, so a new
// eps or step count reuses them (docs/operators/banded.md#certificates).
struct ContractionCache {
  std::string key;
  std::shared_ptr<const ContractionCertificates> value;
};

// What the Engine keeps between requests so that a slider move recomputes only what changed: the primary
// operator's Sinkhorn cache in each precision (ops/sinkhorn/sinkhorn_cache.h), bound to the input on screen.
struct LiveCache {
  SinkhornCache<float> f32;
  SinkhornCache<double> f64;
};

class Engine {
 public:
  using ResultFn = std::function<void(std::shared_ptr<const SessionResult>)>;
  using ErrorFn = std::function<void(uint64_t requestId, const std::string& message)>;
  using ProgressFn = std::function<void(uint64_t requestId, double fraction, const std::string& stage)>;

  // Callbacks run on the worker thread; a GUI forwards them to its own thread.
  Engine(ResultFn onResult, ErrorFn onError, ProgressFn onProgress = {});
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Returns the request id. Results of requests superseded before they finish are dropped; a result that
  // was finishing at the moment of a new submit may still arrive, so receivers compare ids.
  uint64_t submit(const Session& session, const RunOptions& options = {});
  void cancelAll();
  bool busy() const;

 private:
  void workerLoop();
  LoadedSource inputFor(const SourceSpec& source, Feedback& feedback);

  ResultFn onResult_;
  ErrorFn onError_;
  ProgressFn onProgress_;

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  struct Request {
    uint64_t id;
    Session session;
    RunOptions options;
  };
  std::optional<Request> pending_;
  std::shared_ptr<Feedback> running_;
  uint64_t nextId_ = 1;
  uint64_t latestId_ = 0;
  bool working_ = false;
  bool stopping_ = false;

  // The last loaded input, reused while the source is unchanged (slider moves only change operators).
  std::string cachedSourceKey_;
  LoadedSource cachedInput_;
  ContractionCache contractionCache_;
  LiveCache liveCache_;

  std::thread worker_;
};

}  // namespace tl
