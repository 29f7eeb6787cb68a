// The autosave in one process: it writes the window's session after a change, only to its own folder; a second
// instance leaves the folder alone; what a killed run left is offered once; the question box can be answered.
#include <QDir>
#include <QFile>
#include <QMessageBox>
#include <QPushButton>
#include <QSlider>
#include <QTemporaryDir>
#include <QTest>
#include <gtest/gtest.h>

#include "io/atomic_file.h"
#include "common/params.h"
#include "support/gui_test_support.h"
#include "widgets/panels/operator_panel.h"
#include "widgets/shell/main_window.h"
#include "widgets/shell/restore_prompt.h"
#include "widgets/shell/session_autosave.h"

namespace tl {
namespace {

class SessionAutosaveTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { test::ensureApplication(); }

  QString autosaveFile() const { return folder_.filePath("session.json"); }
  QString marker() const { return folder_.filePath("running"); }
  // T of the primary operator in the autosave file; -1 while there is none.
  long long savedBudget() const {
    if (!QFile::exists(autosaveFile())) return -1;
    return getInt(Session::load(autosaveFile().toStdString()).operators.front().params, "T");
  }

  QTemporaryDir folder_;
};

TEST_F(SessionAutosaveTest, WritesTheWindowsSessionAfterAnEditAndAConcurrentRunLeavesItAlone) {
  ASSERT_TRUE(folder_.isValid());
  const QString userFile = folder_.filePath("user_session.json");
  test::smallCloudSession(40).save(userFile.toStdString());
  const std::string userBytes = readFile(userFile.toStdString());
  {
    SessionAutosave autosave(folder_.path());
    ASSERT_TRUE(autosave.active());
    EXPECT_FALSE(autosave.hasRecoverable());
    MainWindow window(Session::load(userFile.toStdString()), userFile);
    QObject::connect(&window, &MainWindow::sessionChanged, &autosave, &SessionAutosave::scheduleSave);
    autosave.watch([&window] { return window.currentSession(); });
    ASSERT_TRUE(test::waitUntil([&] { return savedBudget() == 200; }, std::chrono::seconds(10)));

    auto* slider = window.operatorPanel()->findChild<QSlider*>("slider:T");
    ASSERT_NE(slider, nullptr);
    slider->setValue(9);
    ASSERT_TRUE(test::waitUntil([&] { return savedBudget() == 9; }, std::chrono::seconds(10)));
    EXPECT_EQ(Session::load(autosaveFile().toStdString()).toJson(), window.currentSession().toJson());
    EXPECT_EQ(readFile(userFile.toStdString()), userBytes) << "the autosave never writes the user's file";

    SessionAutosave second(folder_.path());
    EXPECT_FALSE(second.active()) << "another run holds the folder";
    EXPECT_FALSE(second.hasRecoverable());
  }
  EXPECT_FALSE(QFile::exists(autosaveFile())) << "a clean exit removes the autosave";
  EXPECT_FALSE(QFile::exists(marker()));
  EXPECT_EQ(QDir(folder_.path()).entryList(QDir::Files), QStringList{"user_session.json"})
      << "no temporary files left behind";
}

TEST_F(SessionAutosaveTest, WhatAKilledRunLeftIsOfferedUntilRestoredOrDiscarded) {
  ASSERT_TRUE(folder_.isValid());
  // What a killed run leaves: its autosave, and its marker with nobody holding the lock.
  Session left = test::smallCloudSession(30);
  left.operators.front().params["T"] = 13LL;
  left.save(autosaveFile().toStdString());
  writeFileAtomically(marker().toStdString(), "");
  {
    SessionAutosave autosave(folder_.path());
    ASSERT_TRUE(autosave.hasRecoverable());
    EXPECT_EQ(autosave.restore().toJson(), Session::load(autosaveFile().toStdString()).toJson());
    EXPECT_EQ(getInt(autosave.restore().operators.front().params, "T"), 13);
  }
  EXPECT_FALSE(QFile::exists(autosaveFile())) << "restored, then a clean exit: nothing is offered again";

  left.save(autosaveFile().toStdString());
  writeFileAtomically(marker().toStdString(), "");
  {
    SessionAutosave autosave(folder_.path());
    ASSERT_TRUE(autosave.hasRecoverable());
    autosave.discard();
    EXPECT_FALSE(autosave.hasRecoverable());
  }
  SessionAutosave after(folder_.path());
  EXPECT_FALSE(after.hasRecoverable());
}

TEST_F(SessionAutosaveTest, AFolderThatCannotBeMadeTurnsTheAutosaveOffAndSaysWhy) {
  ASSERT_TRUE(folder_.isValid());
  const QString blocker = folder_.filePath("a_file");
  writeFileAtomically(blocker.toStdString(), "");
  SessionAutosave autosave(blocker + "/autosave");  // a folder inside a file: the app still starts
  EXPECT_FALSE(autosave.active());
  EXPECT_FALSE(autosave.hasRecoverable());
  EXPECT_TRUE(autosave.offReason().contains(blocker + "/autosave")) << autosave.offReason().toStdString();
  autosave.watch([] { return test::smallCloudSession(); });
  // The window still announces its edits (its first request among them); an autosave that is off ignores them
  // (it used to call its empty snapshot function and abort the app).
  autosave.scheduleSave();
  QTest::qWait(800);
  EXPECT_EQ(QDir(folder_.path()).entryList(QDir::NoDotAndDotDot | QDir::AllEntries), QStringList{"a_file"});
}

TEST_F(SessionAutosaveTest, RestoreQuestionOffersRestoreAndDiscardAndPresetAnswersSkipIt) {
  ASSERT_TRUE(folder_.isValid());
  test::smallCloudSession(30).save(autosaveFile().toStdString());
  const auto box = makeRestoreQuestion(autosaveFile());
  auto* restore = box->findChild<QPushButton*>("restoreAutosave");
  auto* discard = box->findChild<QPushButton*>("discardAutosave");
  ASSERT_NE(restore, nullptr);
  ASSERT_NE(discard, nullptr);
  EXPECT_EQ(box->defaultButton(), restore);
  EXPECT_EQ(box->detailedText(), autosaveFile());
  box->show();
  ASSERT_TRUE(test::waitUntil([&] { return box->isVisible() && box->width() > 100; }));
  const QImage shot = box->grab().toImage();
  EXPECT_GT(test::distinctColors(shot), 20);  // text, buttons and the icon, not a blank grab
  ASSERT_TRUE(shot.save(QString::fromStdString(test::outputDir() + "/restore_question.png")));

  EXPECT_TRUE(shouldRestore(RestoreAnswer::Restore, autosaveFile()));
  EXPECT_FALSE(shouldRestore(RestoreAnswer::Discard, autosaveFile()));
  EXPECT_EQ(parseRestoreAnswer("yes"), RestoreAnswer::Restore);
  EXPECT_EQ(parseRestoreAnswer("no"), RestoreAnswer::Discard);
  EXPECT_EQ(parseRestoreAnswer("ask"), RestoreAnswer::Ask);
  EXPECT_EQ(parseRestoreAnswer("maybe"), std::nullopt);
}

}  // namespace
}  // namespace tl
