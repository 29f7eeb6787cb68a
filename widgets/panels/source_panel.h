#pragma once
// The source dock: a synthetic generator with controls generated from its schema, user .npy files
// (Q and K required, V and a key mask optional), or a layer and head of a ViT checkpoint (ModelSourcePage).
#include <QWidget>
#include <functional>

#include "data/synthetic.h"
#include "session/session.h"
#include "session/source.h"

class QComboBox;
class QLabel;
class QLineEdit;
class QStackedWidget;
class QVBoxLayout;

namespace tl {

class ModelSourcePage;
class ParamForm;
struct ModelRun;

class SourcePanel : public QWidget {
  Q_OBJECT
 public:
  explicit SourcePanel(QWidget* parent = nullptr);

  // Shows `spec` without emitting sourceChanged.
  void setSource(const SourceSpec& spec);
  const SourceSpec& source() const { return spec_; }

  // Switches to the files page and asks for Q, then K (the File menu's "Open .npy…").
  void openNpy();

  // Model sources. The open/use calls switch to the model page first (File menu, drops on the window).
  void openCheckpoint();
  void useCheckpoint(const QString& path);
  void useImageFile(const QString& path);  // runs once a checkpoint is named
  void setSwapScope(SwapScope scope, const std::vector<int>& listed = {});  // shows it without emitting
  // The result's model run (nullptr: none) bounds the layer and head pickers.
  void showModel(const ModelRun* run);
  ModelSourcePage* modelPage() const { return modelPage_; }

 signals:
  void sourceChanged(const tl::SourceSpec& spec);
  void swapScopeChanged(tl::SwapScope scope);

 private:
  enum FileRole { kQ, kK, kV, kMask, kRoles };
  QWidget* makeFilesPage();
  void showGenerator(const GeneratorInfo& generator, const ParamSet& values);
  void onKindPicked(int index);
  bool browse(FileRole role);
  void commitFiles();
  void showModelPage();
  void commitModel();
  void editModelPage(const std::function<void()>& edit);

  SourceSpec spec_;
  QComboBox* kind_ = nullptr;
  QLabel* description_ = nullptr;
  QStackedWidget* pages_ = nullptr;
  QVBoxLayout* generatorHost_ = nullptr;
  ParamForm* form_ = nullptr;
  QLineEdit* files_[kRoles] = {};
  ModelSourcePage* modelPage_ = nullptr;
};

}  // namespace tl
