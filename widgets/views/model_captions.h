#pragma once
// How the model views name what they show, so the [CLS] maps and the prediction say it the same way:
// "Sinkhorn at layer 5", "the model's own Softmax".
#include <QString>
#include <vector>

#include "session/engine.h"

namespace tl {

QString familyTitle(const OperatorSpec& spec);  // "Sinkhorn"
// "layer 5", "layers 3–5", "all 6 layers" (the swap scopes give runs of consecutive layers).
QString layersCaption(const std::vector<int>& layers, int numLayers);
// "0, 2, 3": ascending layer indices, for captions and menus.
QString layerList(const std::vector<int>& layers);
// "Sinkhorn at layer 5": the primary operator and where the session swapped it in; empty when it did not.
QString swapCaption(const SessionResult& result);

}  // namespace tl
