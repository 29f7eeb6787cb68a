#include "widgets/views/model_captions.h"

#include <QObject>
#include <QStringList>

namespace tl {

QString familyTitle(const OperatorSpec& spec) {
  return QString::fromStdString(OperatorRegistry::builtin().get(spec.family).title);
}

QString layersCaption(const std::vector<int>& layers, int numLayers) {
  if (layers.empty()) return {};
  if (int(layers.size()) == numLayers && numLayers > 1) return QObject::tr("all %1 layers").arg(numLayers);
  if (layers.size() == 1) return QObject::tr("layer %1").arg(layers.front());
  if (layers.back() - layers.front() + 1 == int(layers.size()))  // ascending and distinct: a run
    return QObject::tr("layers %1–%2").arg(layers.front()).arg(layers.back());
  return QObject::tr("layers %1").arg(layerList(layers));
}

QString layerList(const std::vector<int>& layers) {
  QStringList names;
  for (int l : layers) names << QString::number(l);
  return names.join(", ");
}

QString swapCaption(const SessionResult& result) {
  if (!result.swapped || !result.model || result.session.operators.empty()) return {};
  return QObject::tr("%1 at %2")
      .arg(familyTitle(result.session.operators.front()),
           layersCaption(result.swappedLayers, int(result.model->trace.layers.size())));
}

}  // namespace tl
