// Feedback: progress with its stage text reaches the listener; a part of a longer computation is
// canceled with the whole and reports to its own listener.
#include "common/feedback.h"

#include <gtest/gtest.h>

#include <vector>

namespace tl {
namespace {

TEST(Feedback, ProgressAndStageReachTheListener) {
  std::vector<std::pair<double, std::string>> seen;
  Feedback feedback([&](double fraction, const std::string& stage) { seen.emplace_back(fraction, stage); });
  feedback.setProgress(0.25, "image 1/4");
  feedback.setProgress(1.0);
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0], (std::pair<double, std::string>{0.25, "image 1/4"}));
  EXPECT_EQ(seen[1], (std::pair<double, std::string>{1.0, ""}));
  Feedback silent;
  silent.setProgress(0.5, "nobody listens");  // no listener: nothing happens
  EXPECT_FALSE(silent.isCanceled());
}

TEST(Feedback, APartIsCanceledWithTheWholeAndReportsToItsOwnListener) {
  std::vector<std::string> whole, part;
  Feedback outer([&](double, const std::string& stage) { whole.push_back(stage); });
  Feedback inner(outer, [&](double, const std::string& stage) { part.push_back(stage); });
  inner.setProgress(0.5, "layer 1");
  EXPECT_EQ(part, std::vector<std::string>{"layer 1"});
  EXPECT_TRUE(whole.empty());

  Feedback dropped(outer, {});
  dropped.setProgress(0.5, "dropped");  // a part without a listener reports nothing
  EXPECT_TRUE(whole.empty());

  inner.cancel();  // a part's own cancel stays with the part
  EXPECT_TRUE(inner.isCanceled());
  EXPECT_FALSE(outer.isCanceled());
  EXPECT_FALSE(dropped.isCanceled());

  outer.cancel();  // the whole's reaches every part
  EXPECT_TRUE(dropped.isCanceled());
  EXPECT_THROW(dropped.throwIfCanceled(), Canceled);
}

}  // namespace
}  // namespace tl
