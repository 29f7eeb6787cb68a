// Controls are generated from the schemas: every parameter of every registered family and generator
// gets a control of the right kind, and log sliders span their range geometrically.
#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QLineEdit>
#include <QSlider>
#include <QSignalSpy>
#include <gtest/gtest.h>

#include <cmath>

#include "data/synthetic.h"
#include "ops/registry.h"
#include "session/source.h"
#include "support/gui_test_support.h"
#include "widgets/panels/param_form.h"

namespace tl {
namespace {

class ParamFormTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { test::ensureApplication(); }
};

[[nodiscard]] bool hasControl(const ParamForm& form, const ParamSpec& spec) {
  const QString name = QString::fromStdString(spec.name);
  switch (spec.type) {
    case ParamType::Int:
    case ParamType::Real: return form.findChild<QSlider*>("slider:" + name) != nullptr;
    case ParamType::Bool: return form.findChild<QCheckBox*>("check:" + name) != nullptr;
    case ParamType::Choice: return form.findChild<QComboBox*>("choice:" + name) != nullptr;
    case ParamType::Path: return form.findChild<QLineEdit*>("path:" + name) != nullptr;
  }
  return false;
}

TEST_F(ParamFormTest, EveryFamilyAndGeneratorParameterHasAControl) {
  std::vector<std::pair<std::string, ParamSchema>> schemas;
  for (const auto& f : OperatorRegistry::builtin().families()) schemas.emplace_back(f.name, f.schema);
  for (const auto& g : syntheticGenerators()) schemas.emplace_back(g.name, g.schema);
  ASSERT_GE(schemas.size(), 3u);
  for (const auto& [owner, schema] : schemas) {
    ParamForm form(schema, schema.resolve({}, owner));
    EXPECT_EQ(form.values(), schema.resolve({}, owner)) << owner;
    for (const ParamSpec& spec : schema.specs()) EXPECT_TRUE(hasControl(form, spec)) << owner << "." << spec.name;
  }
}

TEST_F(ParamFormTest, EpsSliderIsLogarithmicAndEditsTheValues) {
  const FamilyInfo& sinkhorn = OperatorRegistry::builtin().get("sinkhorn");
  const ParamSpec* eps = sinkhorn.schema.find("eps");
  ASSERT_NE(eps, nullptr);
  ASSERT_TRUE(eps->logScale);
  ParamForm form(sinkhorn.schema, sinkhorn.schema.resolve({}, "sinkhorn"));
  QSignalSpy changed(&form, &ParamForm::valuesChanged);
  auto* slider = form.findChild<QSlider*>("slider:eps");
  ASSERT_NE(slider, nullptr);
  slider->setValue(slider->maximum() / 4);  // a quarter of the way on a log slider: a quarter of the decades
  const double expected = eps->sliderMin() * std::pow(eps->sliderMax() / eps->sliderMin(), 0.25);
  EXPECT_NEAR(getReal(form.values(), "eps"), expected, expected * 0.01);
  slider->setValue(slider->maximum());
  EXPECT_DOUBLE_EQ(getReal(form.values(), "eps"), eps->sliderMax());
  EXPECT_EQ(changed.count(), 2);
  // Tooltips carry the schema's description.
  EXPECT_TRUE(slider->parentWidget()->toolTip().contains(QString::fromStdString(eps->description)));
}

TEST_F(ParamFormTest, SetValuesShowsWithoutEmitting) {
  const FamilyInfo& sinkhorn = OperatorRegistry::builtin().get("sinkhorn");
  ParamForm form(sinkhorn.schema, sinkhorn.schema.resolve({}, "sinkhorn"));
  QSignalSpy changed(&form, &ParamForm::valuesChanged);
  form.setValues(sinkhorn.schema.resolve({{"T", 77LL}}, "sinkhorn"));
  EXPECT_EQ(form.findChild<QSlider*>("slider:T")->value(), 77);
  EXPECT_EQ(changed.count(), 0);
}

TEST_F(ParamFormTest, TinyValuesShowAsThemselves) {
  // A session may hold eps far below the slider's range; the entry must show that value, not a clamped one.
  const FamilyInfo& sinkhorn = OperatorRegistry::builtin().get("sinkhorn");
  ParamForm form(sinkhorn.schema, sinkhorn.schema.resolve({{"eps", 1e-300}}, "sinkhorn"));
  auto* entry = form.findChild<QDoubleSpinBox*>("entry:eps");
  ASSERT_NE(entry, nullptr);
  EXPECT_EQ(entry->value(), 1e-300);
  EXPECT_EQ(entry->text(), QString("1e-300"));
  EXPECT_EQ(getReal(form.values(), "eps"), 1e-300);
  entry->setValue(3e-13);  // typed: kept, not rounded to zero
  EXPECT_EQ(getReal(form.values(), "eps"), 3e-13);
}

}  // namespace
}  // namespace tl
