// app/cli/terminal_progress: the status line is drawn only where asked (never into files, pipes or logs
// unless Draw::Always), throttled except at 100 %, ended with one newline; Ctrl-C cancels the Feedback.
#include "terminal_progress.h"

#include <gtest/gtest.h>

#include <csignal>
#include <cstdio>
#include <string>

namespace tl::cli {
namespace {

std::string contents(std::FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::string text;
  for (int c; (c = std::fgetc(f)) != EOF;) text += char(c);
  return text;
}

TEST(TerminalProgress, DrawsAThrottledStatusLineAndEndsItWithANewline) {
  std::FILE* f = std::tmpfile();
  ASSERT_TRUE(f);
  {
    TerminalProgress progress(TerminalProgress::Draw::Always, f);
    EXPECT_TRUE(progress.drawing());
    progress.feedback().setProgress(0.25, "image 1/4");
    progress.feedback().setProgress(0.5, "image 2/4");  // within 100 ms of the last draw: skipped
    progress.feedback().setProgress(1.0, "image 4/4");  // the end is always drawn
  }
  EXPECT_EQ(contents(f), "\r\033[Kimage 1/4  25.0%\r\033[Kimage 4/4  100.0%\n");
  std::fclose(f);
}

TEST(TerminalProgress, ClearingTheLineLeavesRoomForOtherOutputAndNoNewline) {
  std::FILE* f = std::tmpfile();
  ASSERT_TRUE(f);
  {
    TerminalProgress progress(TerminalProgress::Draw::Always, f);
    progress.feedback().setProgress(1.0, "epoch 1/1  step 8/8");
    progress.clearLine();
  }
  EXPECT_EQ(contents(f), "\r\033[Kepoch 1/1  step 8/8  100.0%\r\033[K");
  std::fclose(f);
}

TEST(TerminalProgress, WritesNothingUnlessTheStreamIsATerminalOrDrawingIsAsked) {
  std::FILE* f = std::tmpfile();
  ASSERT_TRUE(f);
  for (auto draw : {TerminalProgress::Draw::Auto, TerminalProgress::Draw::Never}) {
    TerminalProgress progress(draw, f);  // a file is no terminal
    EXPECT_FALSE(progress.drawing());
    progress.feedback().setProgress(1.0, "image 1/1");
    progress.finish();
  }
  EXPECT_EQ(contents(f), "");
  std::fclose(f);
}

TEST(InterruptScope, CtrlCCancelsTheFeedbackAndTheHandlerIsRestoredAfterwards) {
  auto* inherited = std::signal(SIGINT, SIG_DFL);  // a background job may inherit SIGINT ignored
  Feedback feedback;
  {
    InterruptScope scope(feedback);
    std::raise(SIGINT);
    EXPECT_TRUE(feedback.isCanceled());
  }
  EXPECT_EQ(std::signal(SIGINT, inherited), SIG_DFL);  // the scope put back the handler it found
}

TEST(InterruptScope, AnIgnoredSigintStaysIgnored) {
  auto* inherited = std::signal(SIGINT, SIG_IGN);  // as nohup and background jobs of a script have it
  Feedback feedback;
  {
    InterruptScope scope(feedback);
    std::raise(SIGINT);
    EXPECT_FALSE(feedback.isCanceled());
  }
  EXPECT_EQ(std::signal(SIGINT, inherited), SIG_IGN);
}

}  // namespace
}  // namespace tl::cli
