#pragma once
// Model › Compile this checkpoint into ASAP… (docs/gui.md#compiling-a-checkpoint-into-asap): the settings of
// `tlens asap-compile` as a form (calibration images, slices, feature family, fit, λ_B, layers, parallel / sequential / shared,
// output folder, defaulting next to the checkpoint) and whether to swap the compiled layers in when done.
// The dialog only collects settings; the main window runs the compiler off the GUI thread.
#include <QDialog>
#include <string>
#include <vector>

#include "ops/asap/compile_options.h"

class QCheckBox;
class QLabel;
class QComboBox;
class QLineEdit;
class QSpinBox;

namespace tl {

class AsapCompileDialog : public QDialog {
  Q_OBJECT
 public:
  AsapCompileDialog(const std::string& checkpoint, int numLayers, QWidget* parent = nullptr);

  // Shows `options` in the form (empty layers: every layer; empty out: the default folder).
  void setOptions(const AsapCompileOptions& options);
  // What the form says; checked on accept, so an accepted dialog's options are valid.
  AsapCompileOptions options() const;
  bool swapInWhenDone() const;

  // `<checkpoint>-asap` beside a checkpoint folder or weights file (its extension dropped).
  static std::string defaultOutput(const std::string& checkpoint);

  // Refuses (with the reason in the dialog) an empty layer set or output folder, or KL with predict-both.
  void accept() override;

 private:
  QComboBox* split_ = nullptr;
  QSpinBox* first_ = nullptr;
  QSpinBox* last_ = nullptr;
  QSpinBox* slices_ = nullptr;
  QComboBox* features_ = nullptr;  // the feature family (Table F.3's design alternatives)
  QComboBox* fit_ = nullptr;
  QLineEdit* lambdaB_ = nullptr;
  std::vector<QCheckBox*> layers_;
  QComboBox* calibrationMode_ = nullptr;  // parallel, sequential, shared
  QLineEdit* out_ = nullptr;
  QCheckBox* swapIn_ = nullptr;
  QLabel* problem_ = nullptr;
  std::string checkpoint_;
};

}  // namespace tl
