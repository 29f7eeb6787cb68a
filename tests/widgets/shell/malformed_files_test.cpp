// Malformed files handed to the window through File › Open (the real menu action and file dialog) and dropped
// on it (a QDropEvent with the file's URL): every one is answered with a message, the window keeps the result it
// showed and computes the next session. The files: corrupt versions of the fixtures the core tests read
// (checkpoints, safetensors, PNG, .npy, sessions), and every seed under tests/fuzz/corpus/<target>/ where that
// folder exists. In LibTorch builds the window runs a model source, so checkpoints and images reach their readers.
#include <QAction>
#include <QApplication>
#include <QDir>
#include <QDirIterator>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QElapsedTimer>
#include <QFileDialog>
#include <QFileInfo>
#include <QMessageBox>
#include <QMimeData>
#include <QStatusBar>
#include <QTemporaryDir>
#include <QTimer>
#include <QUrl>
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>

#include "io/atomic_file.h"
#include "support/gui_test_support.h"
#include "vit/model_backend.h"
#include "widgets/shell/main_window.h"

namespace tl {
namespace {

constexpr auto kAnswerTimeout = std::chrono::seconds(10);
constexpr qint64 kFeedingBudgetMs = 40000;  // the whole test stays under a minute, however big the corpora grow
constexpr int kMaxSeedsPerTarget = 12;
constexpr int kKnownMalformedFiles = 14;  // addKnownMalformedFiles: all of them fit in the budget

struct FileToFeed {
  QString path;
  bool knownMalformed;  // fuzz seeds may be valid files: they must be answered, not necessarily refused
  QString culprit;      // the name the message must mention: the file, or the .npy or checkpoint folder it stands for
};

// What the answer must mention: the file, except for what only a model can use (checkpoints, and images, which
// become the model source's image) in a build without the model layer: that build never reads them and says so,
// naming LibTorch and how to rebuild.
QString expectedMention(const FileToFeed& file) {
  const QFileInfo info(file.path);
  const QStringList modelSuffixes = {"pt", "bin", "safetensors", "png", "jpg", "jpeg"};
  const bool forTheModel = info.fileName() == "config.json" || modelSuffixes.contains(info.suffix().toLower());
  return forTheModel && !haveModelBackend() ? QString("LibTorch") : file.culprit;
}

std::string fixture(const std::string& relative) { return std::string(TL_FIXTURE_DIR) + "/" + relative; }

// The session the window returns to between files: a model source where this build runs models (its image a
// fixture PNG, so no dataset is needed), else a small point cloud.
Session baselineSession() {
  Session s = test::smallCloudSession(40);
  if (haveModelBackend())
    s.source = SourceSpec::parse("model:checkpoint=" + fixture("vit/hf_softmax") +
                                 ",image=" + fixture("image_files/rgb8_6x4.png") + ",layer=0,head=0");
  return s;
}

// A .npy reaches the window as the Q and K of a session that names it (File › Open .npy… asks in two dialogs).
QString sessionNaming(const QString& npy) {
  Session s = test::smallCloudSession(40);
  s.source = SourceSpec::parse("files:q=" + npy.toStdString() + ",k=" + npy.toStdString());
  const QString path = npy + ".session.json";
  s.save(path.toStdString());
  return path;
}

class MalformedFiles {
 public:
  explicit MalformedFiles(const QString& folder) : dir_(folder) {}

  // A file beside the ones fed (not fed itself).
  QString place(const QString& name, const std::string& bytes) {
    const QString path = dir_.filePath(name);
    QDir().mkpath(QFileInfo(path).path());
    writeFileAtomically(path.toStdString(), bytes);
    return path;
  }
  void write(const QString& name, const std::string& bytes, bool known = true) {
    const QString path = place(name, bytes);
    const QFileInfo info(path);
    const QString culprit = info.fileName() == "config.json" ? info.dir().dirName() : info.fileName();
    files_.push_back({path.endsWith(".npy") ? sessionNaming(path) : path, known, culprit});
  }
  void truncated(const QString& name, const std::string& source, double keep) {
    const std::string bytes = readFile(source);
    write(name, bytes.substr(0, size_t(bytes.size() * keep)));
  }
  const std::vector<FileToFeed>& files() const { return files_; }

 private:
  QDir dir_;
  std::vector<FileToFeed> files_;
};

void addKnownMalformedFiles(MalformedFiles& files) {
  files.truncated("state_dict_half.pt", fixture("checkpoint_files/state_dict.pt"), 0.5);
  files.truncated("checkpoint_dict_tail_cut.pt", fixture("checkpoint_files/checkpoint_dict.pt"), 0.9);
  files.truncated("model_half.safetensors", fixture("vit/hf_softmax/model.safetensors"), 0.5);
  files.write("huge_header.safetensors", std::string("\xff\xff\xff\xff\xff\xff\xff\x7f{}", 10));
  files.write("empty.pt", "");
  files.place("broken_checkpoint/model.safetensors", readFile(fixture("vit/hf_softmax/model.safetensors")));
  files.write("broken_checkpoint/config.json", "{\"hidden_size\": ");
  files.truncated("rgb_half.png", fixture("image_files/rgb8_6x4.png"), 0.5);
  files.write("not_an_image.jpg", "this is text, not a JPEG");
  files.write("truncated_header.npy", std::string("\x93NUMPY\x01\x00\x76\x00{'descr': '<f8', 'fortran_", 30));
  files.write("shape_without_data.npy", std::string("\x93NUMPY\x01\x00\x46\x00", 10) +
                                            "{'descr': '<f8', 'fortran_order': False, 'shape': (100000, 100000), }\n");
  files.write("cut_session.json", "{\"format\": \"transportlens-session\", \"version\": 1, \"source\": {");
  files.write("not_a_session.json", "[1, 2, 3]");
  files.write("unknown_family.json", R"({"format": "transportlens-session", "version": 1,
      "source": {"kind": "synthetic", "generator": "gaussian", "params": {}},
      "operators": [{"family": "nope", "params": {}}]})");
  files.write("notes.txt", "a file the window does not open");
}

// A seed gets the suffix its target reads (targets are named after their reader: npy, safetensors, session...);
// a checkpoint config becomes a folder's config.json. Anything else keeps its name.
QString nameForSeed(const QString& target, const QString& seed, int index) {
  const QString stem = QStringLiteral("corpus/%1/%2_%3").arg(target).arg(index).arg(QFileInfo(seed).baseName());
  const QString t = target.toLower();
  if (t.contains("config")) return stem + "/config.json";
  static const std::vector<std::pair<QString, QString>> kSuffixByTarget = {
      {"session", "json"}, {"safetensors", "safetensors"}, {"npy", "npy"},   {"pickle", "pt"},
      {"torch", "pt"},     {"zip", "pt"},                  {"png", "png"},   {"jpeg", "jpg"},
      {"jpg", "jpg"},      {"image", "png"},               {"json", "json"}};
  for (const auto& [name, suffix] : kSuffixByTarget)
    if (t.contains(name)) return stem + "." + suffix;
  return QStringLiteral("corpus/%1/%2_%3").arg(target).arg(index).arg(QFileInfo(seed).fileName());
}

void addFuzzSeeds(MalformedFiles& files) {
  const QDir corpus(QStringLiteral(TL_SOURCE_DIR "/tests/fuzz/corpus"));
  if (!corpus.exists()) return;
  for (const QString& target : corpus.entryList(QDir::Dirs | QDir::NoDotAndDotDot, QDir::Name)) {
    QDirIterator seeds(corpus.filePath(target), QDir::Files, QDirIterator::Subdirectories);
    for (int index = 0; seeds.hasNext() && index < kMaxSeedsPerTarget; ++index) {
      const QString seed = seeds.next();
      files.write(nameForSeed(target, seed, index), readFile(seed.toStdString()), false);
    }
  }
}

// File › Open's dialog is modal and blocks in its own event loop: a timer running inside it types the path and
// accepts, as a user would. The dialog lists its folder in the background and may refuse a path until it has, so
// the timer tries again until the dialog takes it (or, after a few seconds, rejects it: the test fails, not hangs).
void answerNextFileDialog(const QString& path) {
  auto* timer = new QTimer(qApp);
  auto tries = std::make_shared<int>(0);
  QObject::connect(timer, &QTimer::timeout, timer, [timer, tries, path] {
    auto* dialog = qobject_cast<QFileDialog*>(QApplication::activeModalWidget());
    if (!dialog) return;
    dialog->setDirectory(QFileInfo(path).absolutePath());
    dialog->selectFile(QFileInfo(path).fileName());
    static_cast<QDialog*>(dialog)->accept();  // QFileDialog::accept is protected; QDialog's dispatches to it
    if (dialog->result() != QDialog::Accepted && ++*tries < 500) return;
    if (dialog->result() != QDialog::Accepted) dialog->reject();
    timer->stop();
    timer->deleteLater();
  });
  timer->start(10);
}

void openThroughFileMenu(MainWindow& window, const QString& path) {
  auto* open = window.findChild<QAction*>("openFile");
  ASSERT_NE(open, nullptr);
  answerNextFileDialog(path);
  open->trigger();
}

void dropOnWindow(MainWindow& window, const QString& path) {
  QMimeData mime;
  mime.setUrls({QUrl::fromLocalFile(path)});
  const QPoint at(window.width() / 2, window.height() / 2);
  QDragEnterEvent enter(at, Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
  QApplication::sendEvent(&window, &enter);
  EXPECT_TRUE(enter.isAccepted()) << "a local file is taken, so the drop gets an answer";
  QDropEvent drop(at, Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
  QApplication::sendEvent(&window, &drop);
}

class MalformedFilesTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    test::ensureApplication();
    // Qt's own dialog, whatever desktop the test runs on: a native one could not be answered from here.
    QApplication::setAttribute(Qt::AA_DontUseNativeDialogs);
  }

  // Back to the baseline, and waits until the window has computed it afresh: the window is alive and responsive.
  [[nodiscard]] bool showBaseline(MainWindow& window) {
    const auto before = window.lastResult();
    window.loadSession(baseline_);
    return test::waitUntil([&] { return window.lastResult() && window.lastResult() != before; });
  }

  void feedAll(void (*route)(MainWindow&, const QString&), const char* routeName) {
    QTemporaryDir folder;
    ASSERT_TRUE(folder.isValid());
    MalformedFiles files(folder.path());
    addKnownMalformedFiles(files);
    addFuzzSeeds(files);
    MainWindow window(baseline_);
    window.show();
    ASSERT_TRUE(test::waitUntil([&] { return window.lastResult() != nullptr; })) << "the baseline computes";
    QElapsedTimer clock;
    clock.start();
    int fed = 0;
    for (const FileToFeed& file : files.files()) {
      if (clock.elapsed() > kFeedingBudgetMs) break;
      SCOPED_TRACE(std::string(routeName) + " " + file.path.toStdString());
      window.statusBar()->clearMessage();
      if (auto* box = window.findChild<QMessageBox*>()) box->hide();
      const auto shown = window.lastResult();
      route(window, file.path);
      const auto message = [&] { return window.statusBar()->currentMessage(); };
      if (file.knownMalformed) {
        EXPECT_TRUE(test::waitUntil([&] { return !message().isEmpty(); }, kAnswerTimeout)) << "no message";
        EXPECT_EQ(window.lastResult(), shown) << "the last result stays on screen";
        EXPECT_TRUE(message().contains(expectedMention(file))) << "the message names the file: " << message().toStdString();
      } else {
        // A seed may be valid: then it computes (or is still computing) instead of failing.
        (void)test::waitUntil([&] { return !message().isEmpty() || window.lastResult() != shown; }, kAnswerTimeout);
        window.cancelComputation();
      }
      ASSERT_TRUE(showBaseline(window)) << "the window computes again after the file";
      ++fed;
    }
    std::printf("%s: fed %d of %zu files in %lld ms\n", routeName, fed, files.files().size(),
                static_cast<long long>(clock.elapsed()));
    EXPECT_GE(fed, kKnownMalformedFiles);
  }

  const Session baseline_ = baselineSession();
};

TEST_F(MalformedFilesTest, EachThroughFileOpenIsAnsweredAndTheWindowCarriesOn) {
  feedAll(&openThroughFileMenu, "File > Open");
}

TEST_F(MalformedFilesTest, EachDroppedOnTheWindowIsAnsweredAndTheWindowCarriesOn) {
  feedAll(&dropOnWindow, "drop");
}

}  // namespace
}  // namespace tl
