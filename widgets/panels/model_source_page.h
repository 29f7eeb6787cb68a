#pragma once
// The Source panel's page for a model checkpoint: the checkpoint (typed, picked in a dialog, or from the
// recent list), the layer and head whose Q, K, V the operators take (bounded by the model once it has run),
// where the primary operator replaces the model's own normaliser (the session's swap scope), and the image:
// a Fashion-MNIST test image from the thumbnail strip or a PNG/JPEG file. Edits are emitted once the page
// names a checkpoint; the Engine loads and runs it off the GUI thread like any other source.
#include <QWidget>

#include "session/session.h"
#include "vit/model_backend.h"

class QComboBox;
class QLabel;
class QSpinBox;

namespace tl {

class ImageStrip;

class ModelSourcePage : public QWidget {
  Q_OBJECT
 public:
  // Layer and head pickers go up to this until a model has run and told its depth and width.
  static constexpr int kUnknownBound = 63;

  explicit ModelSourcePage(QWidget* parent = nullptr);

  void setSpec(const ModelSourceSpec& spec);  // shows it without emitting
  const ModelSourceSpec& spec() const { return spec_; }
  bool complete() const { return !spec_.checkpoint.empty(); }
  // Shows it without emitting; `listed` (Session::swapLayers) names the choice for SwapScope::Listed, which the
  // menu offers only once a session or a compiled model has listed layers.
  void setSwapScope(SwapScope scope, const std::vector<int>& listed = {});
  SwapScope swapScope() const;

  // A run of this page's checkpoint: bounds the layer and head pickers by its model, shows how it describes
  // the image, and puts the checkpoint at the top of the recent list (it loaded, so it is worth offering).
  void showModel(const ModelRun& run);

  void openCheckpointFile();    // dialog: a weights file, or a folder's config.json
  void openCheckpointFolder();  // dialog
  void openImageFile();         // dialog
  void useCheckpoint(const QString& path);
  void useImageFile(const QString& path);

  ImageStrip* imageStrip() const { return strip_; }

 signals:
  void specChanged(const tl::ModelSourceSpec& spec);
  void swapScopeChanged(tl::SwapScope scope);

 private:
  QWidget* makeCheckpointRow();
  QWidget* makeImageRow();
  void commit();
  void showRecent();
  void showImage();
  void forgetModelBounds();

  ModelSourceSpec spec_;
  std::string remembered_;  // the checkpoint last put on the recent list
  QComboBox* checkpoint_ = nullptr;
  QSpinBox* layer_ = nullptr;
  QSpinBox* head_ = nullptr;
  QComboBox* swap_ = nullptr;
  QLabel* image_ = nullptr;
  ImageStrip* strip_ = nullptr;
};

}  // namespace tl
