// The real `transportlens` killed with SIGKILL and started again: the session it was showing comes back when the
// restore question is answered yes, not when it is answered no, and a clean exit (SIGTERM) leaves nothing to
// offer. Each run gets its own HOME and XDG folders, so the user's autosave is never touched.
#include <QDir>
#include <QFile>
#include <QProcess>
#include <QTemporaryDir>
#include <gtest/gtest.h>

#include <sys/stat.h>

#include "common/params.h"
#include "io/atomic_file.h"
#include "support/gui_test_support.h"

namespace tl {
namespace {

constexpr auto kStartTimeout = std::chrono::seconds(30);

class AutosaveRestartTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { test::ensureApplication(); }

  void SetUp() override {
    ASSERT_TRUE(home_.isValid());
    // What the user opened: Sinkhorn with T = 7 and the log colour scale, neither of them a built-in default.
    Session session = test::smallCloudSession(50);
    session.operators.front().params["T"] = 7LL;
    session.viewState["plan"] = {{"logColor", true}};
    userFile_ = home_.filePath("user_session.json");
    session.save(userFile_.toStdString());
    userBytes_ = readFile(userFile_.toStdString());
  }
  void TearDown() override {
    if (app_.state() != QProcess::NotRunning) {
      app_.kill();
      app_.waitForFinished();
    }
  }

  QString autosaveFolder() const { return home_.filePath("data/TransportLens/autosave"); }
  QString autosaveFile() const { return autosaveFolder() + "/session.json"; }
  QString marker() const { return autosaveFolder() + "/running"; }

  void start(const QStringList& args) {
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("HOME", home_.path());
    env.insert("XDG_DATA_HOME", home_.filePath("data"));
    env.insert("XDG_CONFIG_HOME", home_.filePath("config"));
    env.insert("XDG_CACHE_HOME", home_.filePath("cache"));
    app_.setProcessEnvironment(env);
    app_.setProcessChannelMode(QProcess::ForwardedErrorChannel);
    app_.start(TL_TRANSPORTLENS_PATH, args);
    ASSERT_TRUE(app_.waitForStarted()) << app_.errorString().toStdString();
  }
  void killHard() {
    app_.kill();  // SIGKILL: no handler runs, nothing is cleaned up
    ASSERT_TRUE(app_.waitForFinished());
    EXPECT_EQ(app_.exitStatus(), QProcess::CrashExit);
  }
  void quitCleanly() {
    app_.terminate();  // SIGTERM: the app quits as File › Quit does
    ASSERT_TRUE(app_.waitForFinished());
    EXPECT_EQ(app_.exitStatus(), QProcess::NormalExit);
    EXPECT_EQ(app_.exitCode(), 0);
  }

  // Identifies one write of the autosave: every write renames a new file into place, so its inode or, where the
  // file system reuses the number of a file just deleted (a discard), its modification time differs.
  using WriteId = std::pair<ino_t, long long>;
  WriteId autosaveWrite() const {
    struct stat info {};
    if (::stat(QFile::encodeName(autosaveFile()).constData(), &info) != 0) return {0, 0};
    return {info.st_ino, info.st_mtim.tv_sec * 1000000000LL + info.st_mtim.tv_nsec};
  }
  // Waits until the running app has written its autosave (a write other than `previous`).
  [[nodiscard]] bool waitForAutosave(WriteId previous = {0, 0}) const {
    return test::waitUntil([&] { return autosaveWrite().first != 0 && autosaveWrite() != previous; }, kStartTimeout);
  }
  nlohmann::json autosaved() const { return Session::load(autosaveFile().toStdString()).toJson(); }
  long long autosavedBudget() const { return getInt(Session::load(autosaveFile().toStdString()).operators.front().params, "T"); }

  // Killed while showing the user's session: the autosave holds it, the marker stays.
  void runUsersSessionAndKill() {
    start({userFile_});
    ASSERT_TRUE(waitForAutosave());
    EXPECT_EQ(autosavedBudget(), 7);
    killHard();
    ASSERT_TRUE(QFile::exists(marker())) << "a killed run cannot remove its marker";
  }

  QTemporaryDir home_;
  QString userFile_;
  std::string userBytes_;
  QProcess app_;
};

TEST_F(AutosaveRestartTest, KilledRunIsRestoredWhenTheAnswerIsYes) {
  runUsersSessionAndKill();
  const nlohmann::json beforeKill = autosaved();
  const WriteId leftByKilledRun = autosaveWrite();

  start({"--restore-autosave=yes"});  // no session named: without the restore it would show the built-in one
  ASSERT_TRUE(waitForAutosave(leftByKilledRun)) << "the restarted app writes the session it shows";
  EXPECT_EQ(autosaved(), beforeKill) << "the restored window shows the session the killed one showed";
  quitCleanly();
  EXPECT_FALSE(QFile::exists(autosaveFile())) << "a clean exit removes the autosave";
  EXPECT_FALSE(QFile::exists(marker()));
  EXPECT_EQ(readFile(userFile_.toStdString()), userBytes_) << "the user's session file is never written";
}

TEST_F(AutosaveRestartTest, KilledRunIsDiscardedWhenTheAnswerIsNo) {
  runUsersSessionAndKill();
  const WriteId leftByKilledRun = autosaveWrite();
  start({"--restore-autosave=no"});
  ASSERT_TRUE(waitForAutosave(leftByKilledRun));
  EXPECT_NE(autosavedBudget(), 7) << "the built-in session, not the discarded one";
  quitCleanly();
}

TEST_F(AutosaveRestartTest, CleanExitLeavesNothingToRestore) {
  start({userFile_});
  ASSERT_TRUE(waitForAutosave());
  EXPECT_EQ(autosavedBudget(), 7);
  quitCleanly();
  EXPECT_FALSE(QFile::exists(autosaveFile()));
  EXPECT_FALSE(QFile::exists(marker()));

  // Left to ask (the default), the next start asks nothing: a question would hold the start before the window
  // exists, and no autosave would appear. It shows the built-in session.
  start({});
  ASSERT_TRUE(waitForAutosave());
  EXPECT_NE(autosavedBudget(), 7);
  quitCleanly();
}

}  // namespace
}  // namespace tl
