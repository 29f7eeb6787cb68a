// runSession (synchronous) and Engine (worker thread, newest request wins, cancellation).
#include "session/engine.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>

#include "cuda/backend.h"
#include "ops/sinkhorn/sinkhorn.h"
#include "ops/softmax/softmax.h"
#include "support/test_util.h"

namespace tl {
namespace {

using namespace std::chrono_literals;
using test::matricesNear;

Session makeSession(const std::string& source, std::vector<std::string> ops, Precision precision = Precision::F64) {
  Session s;
  s.source = SourceSpec::parse(source);
  s.precision = precision;
  for (const auto& op : ops) s.operators.push_back(OperatorRegistry::builtin().parse(op));
  return s;
}

// About n²·T exponentials: n=400, T=3000 takes seconds; T=100000 takes minutes (only ever cancelled).
Session slowSession(int T) {
  return makeSession("synthetic:gaussian:n=400,d=16,seed=1", {"sinkhorn:T=" + std::to_string(T)});
}
Session smallSession(int T = 4) {
  return makeSession("synthetic:gaussian:n=12,d=4,seed=2", {"sinkhorn:T=" + std::to_string(T)});
}

TEST(RunSession, SameAsCallingTheOperatorDirectly) {
  const Session s = makeSession("synthetic:gaussian:n=24,d=8,seed=3", {"sinkhorn:T=6,eps=0.5", "softmax"});
  const SessionResult r = runSession(s);
  const auto input = loadSource(s.source).attention();
  ASSERT_TRUE(r.input);
  EXPECT_TRUE(test::matricesIdentical(r.input->Q, input.Q));
  ASSERT_EQ(r.runs.size(), 2u);
  EXPECT_EQ(r.runs[0].spec.family, "sinkhorn");
  EXPECT_EQ(r.runs[1].spec.family, "softmax");
  SinkhornParams p;
  p.T = 6;
  p.eps = 0.5;
  const auto direct = sinkhornAttention(input, p);
  EXPECT_TRUE(matricesNear(r.runs[0].result.plan.dense(), direct.plan.dense(), 1e-15));
  EXPECT_TRUE(matricesNear(r.runs[0].result.u, direct.u, 1e-15));
  EXPECT_EQ(r.runs[0].result.errorHistory.size(), 6u);
  EXPECT_TRUE(matricesNear(r.runs[1].result.plan.dense(), softmaxAttention(input, SoftmaxParams{}).plan.dense(), 1e-15));
  EXPECT_GE(r.seconds, 0.0);
}

TEST(RunSession, Float32PrecisionRunsInFloat) {
  const Session s = makeSession("synthetic:gaussian:n=24,d=8,seed=3", {"sinkhorn:T=6,eps=0.5"}, Precision::F32);
  const SessionResult r = runSession(s);
  const auto input = loadSource(s.source).attention();
  SinkhornParams p;
  p.T = 6;
  p.eps = 0.5;
  const MatD expected = sinkhornAttention(input.cast<float>(), p).plan.dense().cast<double>();
  ASSERT_EQ(r.runs.size(), 1u);
  EXPECT_TRUE(test::matricesIdentical(r.runs[0].result.plan.dense(), expected)) << "computed in float, widened";
  // ... and it is not the float64 result (which differs in the last float bits somewhere).
  EXPECT_GT((r.runs[0].result.plan.dense() - sinkhornAttention(input, p).plan.dense()).cwiseAbs().maxCoeff(), 0.0);
  EXPECT_TRUE(matricesNear(runOperator(s.operators[0], input, Precision::F32).plan.dense(), expected, 0.0));
}

// The device choice: cpu runs the reference; on a machine without a GPU (or without CUDA kernels for the
// parameters) auto runs on the CPU and says why; cuda without a usable GPU is an error, not a silent fallback.
TEST(RunSession, TheDeviceChoiceIsNeverSilent) {
  const auto input = loadSource(SourceSpec::parse("synthetic:gaussian:n=16,d=4,seed=2")).attention();
  const OperatorSpec esp = OperatorRegistry::builtin().parse("esp:sort=soft");
  const PlanResult<double> cpu = runOperator(esp, input, Precision::F64, DeviceChoice::Cpu);
  EXPECT_EQ(cpu.backend, Backend::Cpu);
  EXPECT_TRUE(cpu.backendNote.empty());
  if (backendInfo().cudaDevices == 0) {
    const PlanResult<double> automatic = runOperator(esp, input, Precision::F64, DeviceChoice::Auto);
    EXPECT_EQ(automatic.backend, Backend::Cpu) << "no usable GPU";
    EXPECT_FALSE(automatic.backendNote.empty());
    EXPECT_TRUE(test::matricesIdentical(automatic.plan.dense(), cpu.plan.dense()));
    EXPECT_TRUE(test::throwsWith<ResourceError>(
        [&] { (void)runOperator(OperatorRegistry::builtin().parse("sinkhorn"), input, Precision::F64, DeviceChoice::Cuda); },
        {"device cuda", "device cpu"}));
  }
}

// The heads of a layer: one result per head, each what the operator gives that head alone.
TEST(RunSession, ABatchOfHeadsGivesEachHeadsOwnResult) {
  const auto op = OperatorRegistry::builtin().create(OperatorRegistry::builtin().parse("sinkhorn:T=5"));
  AttentionBatch<double> heads;
  for (uint64_t seed : {3, 4, 5}) heads.push_back(loadSource(SourceSpec::parse("synthetic:gaussian:n=12,d=4,seed=" + std::to_string(seed))).attention());
  const auto results = runOperatorBatch(*op, heads, Precision::F64, DeviceChoice::Cpu);
  ASSERT_EQ(results.size(), 3u);
  for (size_t h = 0; h < heads.size(); ++h)
    EXPECT_TRUE(test::matricesIdentical(results[h].plan.dense(), op->run(heads[h], noFeedback()).plan.dense())) << h;
}

// Compare sessions carry each plan's analysis and its distance to the first, computed off the GUI thread;
// a single-operator session skips that work.
TEST(RunSession, CompareSessionsCarryAnalysesAndDistancesToTheFirst) {
  const auto r = runSession(makeSession("synthetic:gaussian:n=24,d=4,seed=1", {"softmax", "sinkhorn:T=20"}));
  ASSERT_EQ(r.runs.size(), 2u);
  ASSERT_TRUE(r.runs[0].analysis && r.runs[1].analysis);
  EXPECT_FALSE(r.runs[0].toFirst);
  ASSERT_TRUE(r.runs[1].toFirst);
  const PlanComparison expected = comparePlans(r.runs[1].result, r.runs[0].result);
  EXPECT_EQ(r.runs[1].toFirst->relativeFrobenius, expected.relativeFrobenius);
  EXPECT_GT(r.runs[1].toFirst->relativeFrobenius, 0.0);
  EXPECT_EQ(r.runs[1].analysis->errors.colMax, analyzePlan(r.runs[1].result).errors.colMax);

  const auto single = runSession(makeSession("synthetic:gaussian:n=24,d=4,seed=1", {"softmax"}));
  EXPECT_FALSE(single.runs[0].analysis);
}

TEST(RunSession, ErrorsAreThrown) {
  const Session missing = makeSession("files:q=/nonexistent/dir/Q.npy,k=/nonexistent/dir/K.npy", {"softmax"});
  EXPECT_TRUE(test::throwsWith<FileError>([&] { (void)runSession(missing); }, {"/nonexistent/dir/Q.npy"}));
  Feedback canceled;
  canceled.cancel();
  EXPECT_THROW((void)runSession(smallSession(50), canceled), Canceled);
}

// Collects callbacks from the worker thread.
struct Collector {
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<std::shared_ptr<const SessionResult>> results;
  std::vector<std::pair<uint64_t, std::string>> errors;
  int progressCalls = 0;

  Engine::ResultFn onResult() {
    return [this](std::shared_ptr<const SessionResult> r) {
      std::lock_guard<std::mutex> lock(mutex);
      results.push_back(std::move(r));
      changed.notify_all();
    };
  }
  Engine::ErrorFn onError() {
    return [this](uint64_t id, const std::string& message) {
      std::lock_guard<std::mutex> lock(mutex);
      errors.emplace_back(id, message);
      changed.notify_all();
    };
  }
  Engine::ProgressFn onProgress() {
    return [this](uint64_t, double, const std::string&) {
      std::lock_guard<std::mutex> lock(mutex);
      ++progressCalls;
      changed.notify_all();
    };
  }
  // Waits until a result or error for `id` arrived; false on timeout.
  bool waitFor(uint64_t id, std::chrono::seconds timeout = 120s) {
    std::unique_lock<std::mutex> lock(mutex);
    return changed.wait_for(lock, timeout, [&] {
      for (const auto& r : results)
        if (r && r->requestId == id) return true;
      for (const auto& e : errors)
        if (e.first == id) return true;
      return false;
    });
  }
  std::vector<uint64_t> resultIds() {
    std::lock_guard<std::mutex> lock(mutex);
    std::vector<uint64_t> ids;
    for (const auto& r : results) ids.push_back(r ? r->requestId : 0);
    return ids;
  }
};

bool waitUntilIdle(const Engine& engine, std::chrono::seconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (engine.busy()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(5ms);
  }
  return true;
}

TEST(Engine, DeliversTheResultOfARequest) {
  Collector c;
  Engine engine(c.onResult(), c.onError(), c.onProgress());
  const Session s = smallSession(6);
  const uint64_t id = engine.submit(s);
  ASSERT_TRUE(c.waitFor(id));
  ASSERT_EQ(c.resultIds(), std::vector<uint64_t>{id});
  const auto& r = *c.results[0];
  ASSERT_EQ(r.runs.size(), 1u);
  EXPECT_TRUE(matricesNear(r.runs[0].result.plan.dense(), runSession(s).runs[0].result.plan.dense(), 0.0));
  EXPECT_TRUE(c.errors.empty());
}

// Submitting while a slow request runs: the slow one is cancelled and never delivered; the newer one is.
TEST(Engine, NewerRequestSupersedesOlder) {
  Collector c;
  Engine engine(c.onResult(), c.onError());
  const uint64_t slow = engine.submit(slowSession(3000));
  const uint64_t fast = engine.submit(smallSession());
  EXPECT_GT(fast, slow);
  ASSERT_TRUE(c.waitFor(fast)) << "newest request never completed";
  ASSERT_TRUE(waitUntilIdle(engine, 120s));
  const auto ids = c.resultIds();
  EXPECT_EQ(ids, std::vector<uint64_t>{fast}) << "a superseded request must not be delivered";
}

// A slider drag: many quick submits. Delivered ids strictly increase, the last request is always delivered,
// and each delivered result belongs to the session submitted under its id.
TEST(Engine, RapidSubmitsDeliverInOrderAndNewestLast) {
  Collector c;
  Engine engine(c.onResult(), c.onError());
  std::map<uint64_t, int> budgetOf;
  uint64_t last = 0;
  for (int T = 1; T <= 40; ++T) {
    last = engine.submit(makeSession("synthetic:gaussian:n=150,d=8,seed=5", {"sinkhorn:T=" + std::to_string(T * 5)}));
    budgetOf[last] = T * 5;
  }
  ASSERT_TRUE(c.waitFor(last));
  ASSERT_TRUE(waitUntilIdle(engine, 120s));
  const auto ids = c.resultIds();
  ASSERT_FALSE(ids.empty());
  EXPECT_EQ(ids.back(), last);
  for (size_t i = 1; i < ids.size(); ++i) EXPECT_LT(ids[i - 1], ids[i]) << "results out of order";
  std::lock_guard<std::mutex> lock(c.mutex);
  for (const auto& r : c.results) {
    ASSERT_EQ(r->runs.size(), 1u);
    EXPECT_EQ(getInt(r->runs[0].spec.params, "T"), budgetOf.at(r->requestId)) << "result of request " << r->requestId;
    EXPECT_EQ(r->runs[0].result.errorHistory.size(), size_t(budgetOf.at(r->requestId)));
    EXPECT_EQ(getInt(r->session.operators[0].params, "T"), budgetOf.at(r->requestId));
  }
  for (const auto& e : c.errors) EXPECT_NE(e.first, last) << "the newest request failed: " << e.second;
}

TEST(Engine, CancelAllStopsWork) {
  Collector c;
  Engine engine(c.onResult(), c.onError(), c.onProgress());
  const uint64_t id = engine.submit(slowSession(100000));  // minutes if never cancelled
  EXPECT_TRUE(engine.busy());
  {
    // Give the worker a moment to start the computation, so the running (not just the pending) job
    // is what gets cancelled.
    std::unique_lock<std::mutex> lock(c.mutex);
    c.changed.wait_for(lock, 10s, [&] { return c.progressCalls > 0; });
    EXPECT_GT(c.progressCalls, 0) << "the slow request should have started and reported progress";
  }
  engine.cancelAll();
  EXPECT_TRUE(waitUntilIdle(engine, 60s)) << "cancelAll did not stop the running computation";
  EXPECT_TRUE(c.resultIds().empty()) << "a cancelled request must not be delivered";
  for (const auto& e : c.errors) EXPECT_EQ(e.first, id);
  // The engine keeps working afterwards.
  const uint64_t next = engine.submit(smallSession());
  ASSERT_TRUE(c.waitFor(next));
  EXPECT_EQ(c.resultIds(), std::vector<uint64_t>{next});
}

TEST(Engine, InvalidSessionReportsAnError) {
  Collector c;
  Engine engine(c.onResult(), c.onError());
  const uint64_t bad = engine.submit(makeSession("files:q=/nonexistent/dir/Q.npy,k=/nonexistent/dir/K.npy", {"softmax"}));
  ASSERT_TRUE(c.waitFor(bad));
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    ASSERT_EQ(c.errors.size(), 1u);
    EXPECT_EQ(c.errors[0].first, bad);
    EXPECT_NE(c.errors[0].second.find("/nonexistent/dir/Q.npy"), std::string::npos) << c.errors[0].second;
    EXPECT_TRUE(c.results.empty());
  }
  const uint64_t good = engine.submit(smallSession());
  ASSERT_TRUE(c.waitFor(good));
  EXPECT_EQ(c.resultIds(), std::vector<uint64_t>{good});
}

TEST(Engine, DestroyingWhileBusyDoesNotDeliver) {
  Collector c;
  {
    Engine engine(c.onResult(), c.onError());
    (void)engine.submit(slowSession(100000));
    std::this_thread::sleep_for(50ms);
  }  // destructor must cancel and join, not wait minutes
  EXPECT_TRUE(c.resultIds().empty());
}

// A banded primary operator brings its certificates; the engine reuses the contraction certificates (Δ in
// logit units) when only eps or the steps change, and recomputes them for another W. Every report equals the
// core's for its own parameters.
TEST(Engine, BandedCertificatesFollowEpsWithoutRecomputingTheDiameters) {
  Collector c;
  Engine engine(c.onResult(), c.onError());
  auto run = [&](const std::string& op) {
    const uint64_t id = engine.submit(makeSession("synthetic:gaussian:n=40,d=4,seed=2", {op}));
    EXPECT_TRUE(c.waitFor(id));
    std::lock_guard<std::mutex> lock(c.mutex);
    return c.results.back();
  };
  const auto a = run("banded:W=9,tile=8,eps=1");
  const auto b = run("banded:W=9,tile=8,eps=0.5,base_steps=9");
  const auto w = run("banded:W=10,tile=8,eps=0.5");
  ASSERT_TRUE(a && b && w && a->certificates && b->certificates && w->certificates);
  EXPECT_EQ(a->certificates->contraction, b->certificates->contraction);  // the same object, not recomputed
  EXPECT_NE(b->certificates->contraction, w->certificates->contraction);
  for (const auto& r : {a, b, w}) {
    const BandedParams p = BandedParams::from(r->session.operators.front().params);
    const ContractionSummary fresh = summarizeContraction(contractionCertificates(*r->input, p, p.tile), p.eps);
    const ContractionSummary shown = summarizeContraction(*r->certificates->contraction, r->certificates->eps);
    EXPECT_EQ(shown.blocks, fresh.blocks);
    EXPECT_EQ(shown.medianRhoH, fresh.medianRhoH);
    EXPECT_EQ(shown.maxRhoRange, fresh.maxRhoRange);
  }
  EXPECT_GT(summarizeContraction(*a->certificates->contraction, 1.0).blocks, 0u);
  EXPECT_NE(summarizeContraction(*a->certificates->contraction, 1.0).medianRhoH,
            summarizeContraction(*b->certificates->contraction, 0.5).medianRhoH);
  EXPECT_FALSE(run("sinkhorn:T=4")->certificates);  // other families carry none
}

// A live sequence of edits (T up and down, eps, precision, another source, a second operator): the Engine reuses
// the primary Sinkhorn's scores and loop between requests (ops/sinkhorn/sinkhorn_cache.h), and every result it
// delivers equals a fresh synchronous run of the same session bit for bit.
TEST(Engine, LiveEditsReuseTheSinkhornStateAndEqualFreshRuns) {
  Collector c;
  Engine engine(c.onResult(), c.onError());
  const std::vector<Session> edits = {
      makeSession("synthetic:gaussian:n=40,d=4,seed=2", {"sinkhorn:T=5,eps=0.5"}),
      makeSession("synthetic:gaussian:n=40,d=4,seed=2", {"sinkhorn:T=12,eps=0.5"}),
      makeSession("synthetic:gaussian:n=40,d=4,seed=2", {"sinkhorn:T=3,eps=0.5"}),
      makeSession("synthetic:gaussian:n=40,d=4,seed=2", {"sinkhorn:T=3,eps=0.2"}),
      makeSession("synthetic:gaussian:n=40,d=4,seed=2", {"sinkhorn:T=9,eps=0.2"}, Precision::F32),
      makeSession("synthetic:gaussian:n=40,d=4,seed=2", {"sinkhorn:T=11,eps=0.2"}, Precision::F32),
      makeSession("synthetic:gaussian:n=40,d=4,seed=3", {"sinkhorn:T=14,eps=0.2"}, Precision::F32),
      makeSession("synthetic:gaussian:n=40,d=4,seed=3", {"sinkhorn:T=16,eps=0.2", "sinkhorn:T=2"}, Precision::F32),
      makeSession("synthetic:gaussian:n=40,d=4,seed=3", {"softmax"}),
      makeSession("synthetic:gaussian:n=40,d=4,seed=3", {"sinkhorn:T=20,eps=0.2"})};
  for (const Session& s : edits) {
    const uint64_t id = engine.submit(s);
    ASSERT_TRUE(c.waitFor(id));
    std::shared_ptr<const SessionResult> live;
    {
      std::lock_guard<std::mutex> lock(c.mutex);
      ASSERT_TRUE(c.errors.empty()) << c.errors.front().second;
      live = c.results.back();
    }
    const SessionResult fresh = runSession(s);
    ASSERT_EQ(live->runs.size(), fresh.runs.size());
    for (size_t i = 0; i < fresh.runs.size(); ++i) {
      const PlanResult<double>& a = live->runs[i].result;
      const PlanResult<double>& b = fresh.runs[i].result;
      EXPECT_TRUE(test::matricesIdentical(a.plan.dense(), b.plan.dense())) << s.operators[i].toString();
      EXPECT_TRUE(test::matricesIdentical(a.u, b.u));
      EXPECT_TRUE(test::matricesIdentical(a.vHistory, b.vHistory));
      EXPECT_EQ(a.errors.colMax, b.errors.colMax);
    }
  }
}

}  // namespace
}  // namespace tl
