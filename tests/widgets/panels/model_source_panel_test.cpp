// The Source panel's model page and the window's ways in for checkpoints: the layer and head pickers follow
// the model that ran, loaded checkpoints join the recent list (panel and File menu), the thumbnail strip and
// its index pick the Fashion-MNIST image, and checkpoints and images dropped on the window become the source.
#include <QAction>
#include <QApplication>
#include <QComboBox>
#include <QDropEvent>
#include <QImage>
#include <QLineEdit>
#include <QMenu>
#include <QMimeData>
#include <QSpinBox>
#include <QStatusBar>
#include <QToolButton>
#include <QUrl>
#include <gtest/gtest.h>

#include <filesystem>

#include "support/gui_test_support.h"
#include "support/model_gui_test_support.h"
#include "widgets/panels/image_strip.h"
#include "widgets/panels/model_source_page.h"
#include "widgets/panels/source_panel.h"
#include "widgets/shell/checkpoint_files.h"
#include "widgets/shell/main_window.h"

namespace tl {
namespace {

// Delivers a drag-enter and a drop of `paths` as a file manager would; returns whether the drag was accepted.
bool dropFiles(QWidget* target, const QStringList& paths) {
  QMimeData mime;
  QList<QUrl> urls;
  for (const QString& path : paths) urls << QUrl::fromLocalFile(path);
  mime.setUrls(urls);
  const QPoint at = target->rect().center();
  QDragEnterEvent enter(at, Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
  QApplication::sendEvent(target, &enter);
  if (!enter.isAccepted()) return false;
  QDropEvent drop(at, Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
  QApplication::sendEvent(target, &drop);
  return true;
}

std::string absolute(const std::string& path) { return std::filesystem::absolute(path).lexically_normal().string(); }

class ModelSourcePanelTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { test::ensureApplication(); }

  void open(const Session& session) {
    window_ = std::make_unique<MainWindow>(session);
    window_->resize(1500, 950);
    window_->show();
    ASSERT_TRUE(test::waitForResult(*window_, [](const SessionResult&) { return true; }));
  }
  ModelSourcePage* page() const { return window_->sourcePanel()->modelPage(); }

  std::unique_ptr<MainWindow> window_;
};

TEST_F(ModelSourcePanelTest, LayerAndHeadPickersFollowTheModel) {
  ModelSourcePage fresh;
  EXPECT_EQ(fresh.findChild<QSpinBox*>("modelLayer")->maximum(), ModelSourcePage::kUnknownBound);

  open(test::modelSession(test::fixtureCheckpoint("hf_softmax"), 1, 1));
  auto* layer = page()->findChild<QSpinBox*>("modelLayer");
  auto* head = page()->findChild<QSpinBox*>("modelHead");
  ASSERT_NE(layer, nullptr);
  ASSERT_NE(head, nullptr);
  EXPECT_EQ(layer->maximum(), 1);  // 2 layers
  EXPECT_EQ(head->maximum(), 1);   // 2 heads
  EXPECT_EQ(layer->value(), 1);
  EXPECT_EQ(head->value(), 1);
  EXPECT_TRUE(layer->toolTip().contains("layers 0–1")) << layer->toolTip().toStdString();
  auto* kind = window_->sourcePanel()->findChild<QComboBox*>("sourceKind");
  EXPECT_EQ(kind->currentData().toString(), "model");
}

TEST_F(ModelSourcePanelTest, LoadedCheckpointsJoinTheRecentList) {
  const std::string softmax = test::fixtureCheckpoint("hf_softmax"), sinkhorn = test::fixtureCheckpoint("hf_sinkhorn_T4");
  open(test::modelSession(softmax));
  ASSERT_FALSE(recentCheckpoints().isEmpty());
  EXPECT_EQ(recentCheckpoints().front().toStdString(), absolute(softmax));

  // Typed into the checkpoint box, like a user would.
  auto* box = page()->findChild<QComboBox*>("modelCheckpoint");
  ASSERT_NE(box, nullptr);
  box->setEditText(QString::fromStdString(sinkhorn));
  emit box->lineEdit()->editingFinished();
  // Another checkpoint may be deeper: the layer picker opens up until its run arrives.
  EXPECT_EQ(page()->findChild<QSpinBox*>("modelLayer")->maximum(), ModelSourcePage::kUnknownBound);
  ASSERT_TRUE(test::waitForResult(*window_, [&](const SessionResult& r) { return r.model && r.model->checkpoint == sinkhorn; }));
  EXPECT_EQ(recentCheckpoints().mid(0, 2), (QStringList{QString::fromStdString(absolute(sinkhorn)), QString::fromStdString(absolute(softmax))}));
  EXPECT_EQ(box->count(), recentCheckpoints().size());
  EXPECT_EQ(window_->lastResult()->model->config.attention.family, "sinkhorn");

  // File > Recent checkpoints lists them and opens the one picked.
  auto* menu = window_->findChild<QMenu*>("recentCheckpoints");
  ASSERT_NE(menu, nullptr);
  emit menu->aboutToShow();
  QAction* back = nullptr;
  for (QAction* a : menu->actions())
    if (a->text().toStdString() == absolute(softmax)) back = a;
  ASSERT_NE(back, nullptr);
  back->trigger();
  ASSERT_TRUE(test::waitForResult(*window_, [&](const SessionResult& r) {
    return r.model && r.model->config.attention.family == "softmax";
  }));
  EXPECT_NE(window_->findChild<QAction*>("openCheckpoint"), nullptr);
}

TEST_F(ModelSourcePanelTest, FileMenuOffersEveryBundledCheckpoint) {
  open(test::modelSession(test::fixtureCheckpoint("hf_softmax")));
  auto* menu = window_->findChild<QMenu*>("sampleCheckpoints");
  ASSERT_NE(menu, nullptr);
  QStringList names;
  for (QAction* a : menu->actions()) names << a->text();
  QStringList bundled;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(TL_SOURCE_DIR) + "/sample_checkpoints"))
    bundled << QString::fromStdString(entry.path().filename().string());
  bundled.sort();
  ASSERT_EQ(names, bundled);
  ASSERT_TRUE(names.contains("softmax"));
  menu->actions().at(names.indexOf("softmax"))->trigger();
  ASSERT_TRUE(test::waitForResult(*window_, [](const SessionResult& r) {
    return r.model && r.model->checkpoint.find("sample_checkpoints/softmax") != std::string::npos;
  }));
  EXPECT_EQ(window_->lastResult()->model->config.numLayers, 6);
}

TEST_F(ModelSourcePanelTest, TheRecentListKeepsTheNewestEight) {
  std::vector<std::string> dirs;
  for (int i = 0; i < 10; ++i) {
    dirs.push_back(test::scratchDir() + "/recent" + std::to_string(i));
    std::filesystem::create_directories(dirs.back());
    rememberCheckpoint(QString::fromStdString(dirs.back()));
  }
  const QStringList recent = recentCheckpoints();
  ASSERT_EQ(recent.size(), kRecentCheckpoints);
  EXPECT_EQ(recent.front().toStdString(), dirs[9]);
  EXPECT_EQ(recent.back().toStdString(), dirs[2]);
  std::filesystem::remove_all(dirs[9]);  // deleted since: not offered
  EXPECT_EQ(recentCheckpoints().front().toStdString(), dirs[8]);
}

TEST_F(ModelSourcePanelTest, TheThumbnailStripPicksAndPagesTheTestImages) {
  open(test::modelSession(test::fixtureCheckpoint("hf_softmax")));
  ImageStrip* strip = page()->imageStrip();
  ASSERT_EQ(strip->imageCount(), 64);  // the generated split
  EXPECT_EQ(strip->selected(), 0);
  EXPECT_TRUE(strip->thumbnail(0)->isChecked());
  // Two classes alternate in the generated split.
  EXPECT_EQ(strip->thumbnail(0)->text(), "T-shirt/top");
  EXPECT_EQ(strip->thumbnail(3)->text(), "Trouser");
  EXPECT_FALSE(strip->thumbnail(3)->icon().isNull());

  strip->thumbnail(3)->click();
  ASSERT_TRUE(test::waitForResult(*window_, [](const SessionResult& r) { return r.session.source.model.image.index == 3; }));
  EXPECT_NE(window_->lastResult()->model->image.description.find("#3"), std::string::npos);
  EXPECT_EQ(window_->lastResult()->model->image.label, 1);

  strip->findChild<QToolButton*>("stripNext")->click();
  EXPECT_EQ(strip->firstShown(), ImageStrip::kPerPage);
  EXPECT_FALSE(strip->thumbnail(3)->isChecked());  // image 19 is not the chosen one
  strip->findChild<QSpinBox*>("stripIndex")->setValue(40);
  EXPECT_EQ(strip->firstShown(), 32);
  ASSERT_TRUE(test::waitForResult(*window_, [](const SessionResult& r) { return r.session.source.model.image.index == 40; }));
  EXPECT_TRUE(strip->thumbnail(8)->isChecked());
}

TEST_F(ModelSourcePanelTest, DroppedCheckpointsAndImagesBecomeTheSource) {
  open(test::gaussianSession());
  const std::string sinkhorn = test::fixtureCheckpoint("hf_sinkhorn_T4");
  // An image alone cannot run yet: the window says what is missing and keeps the synthetic source.
  const QString png = QString::fromStdString(test::scratchDir() + "/gradient.png");
  QImage image(16, 16, QImage::Format_RGB32);
  for (int y = 0; y < 16; ++y)
    for (int x = 0; x < 16; ++x) image.setPixel(x, y, qRgb(16 * x, 16 * y, 128));
  ASSERT_TRUE(image.save(png));
  ASSERT_TRUE(dropFiles(window_.get(), {png}));
  EXPECT_TRUE(window_->statusBar()->currentMessage().contains("checkpoint")) << window_->statusBar()->currentMessage().toStdString();
  EXPECT_EQ(window_->currentSession().source.kind, SourceSpec::Kind::Synthetic);

  // Then a checkpoint folder's config.json: the folder runs, on the dropped image.
  ASSERT_TRUE(dropFiles(window_.get(), {QString::fromStdString(sinkhorn + "/config.json")}));
  ASSERT_TRUE(test::waitForResult(*window_, [&](const SessionResult& r) { return r.model && r.model->checkpoint == sinkhorn; }));
  EXPECT_EQ(window_->lastResult()->session.source.model.image.file, png.toStdString());
  EXPECT_EQ(window_->lastResult()->model->image.description, "gradient.png");
  EXPECT_EQ(window_->currentSession().views.back(), "prediction");  // a model session lists the model views

  // Another weights file; a file of another kind is taken and answered with a message, the source stays.
  const std::string softmax = test::fixtureCheckpoint("hf_softmax");
  ASSERT_TRUE(dropFiles(window_.get(), {QString::fromStdString(softmax + "/model.safetensors")}));
  ASSERT_TRUE(test::waitForResult(*window_, [](const SessionResult& r) {
    return r.model && r.model->config.attention.family == "softmax";
  }));
  window_->statusBar()->clearMessage();
  EXPECT_TRUE(dropFiles(window_.get(), {QString::fromStdString(sinkhorn + "/images.npy")}));
  EXPECT_TRUE(window_->statusBar()->currentMessage().contains("Cannot open images.npy"))
      << window_->statusBar()->currentMessage().toStdString();
  EXPECT_EQ(window_->currentSession().source.model.checkpoint, softmax + "/model.safetensors");
}

}  // namespace
}  // namespace tl
