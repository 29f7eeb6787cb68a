#pragma once
// The source dock: a synthetic generator with controls generated from its schema, or user .npy files
// (Q and K required, V and a key mask optional).
#include <QWidget>

#include "data/source.h"

class QComboBox;
class QLabel;
class QLineEdit;
class QStackedWidget;
class QVBoxLayout;

namespace tl {

class ParamForm;

class SourcePanel : public QWidget {
  Q_OBJECT
 public:
  explicit SourcePanel(QWidget* parent = nullptr);

  // Shows `spec` without emitting sourceChanged.
  void setSource(const SourceSpec& spec);
  const SourceSpec& source() const { return spec_; }

  // Switches to the files page and asks for Q, then K (the File menu's "Open .npy…").
  void openNpy();

 signals:
  void sourceChanged(const tl::SourceSpec& spec);

 private:
  enum FileRole { kQ, kK, kV, kMask, kRoles };
  QWidget* makeFilesPage();
  void showGenerator(const GeneratorInfo& generator, const ParamSet& values);
  void onKindPicked(int index);
  bool browse(FileRole role);
  void commitFiles();

  SourceSpec spec_;
  QComboBox* kind_ = nullptr;
  QLabel* description_ = nullptr;
  QStackedWidget* pages_ = nullptr;
  QVBoxLayout* generatorHost_ = nullptr;
  ParamForm* form_ = nullptr;
  QLineEdit* files_[kRoles] = {};
};

}  // namespace tl
