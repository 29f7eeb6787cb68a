#include "vit/model_source.h"

#include <sstream>

#include "common/errors.h"

namespace tl {
namespace {
int indexValue(const std::string& key, const std::string& value) {
  if (value.empty() || value.size() > 4 || value.find_first_not_of("0123456789") != std::string::npos)
    throw InvalidArgument("model source: " + key + "='" + value + "' is not a non-negative integer");
  return std::stoi(value);
}
}  // namespace

ModelSourceSpec ModelSourceSpec::parse(const std::string& keyValues) {
  ModelSourceSpec s;
  bool haveImage = false;
  std::stringstream items(keyValues);
  for (std::string item; std::getline(items, item, ',');) {
    const auto eq = item.find('=');
    const std::string key = item.substr(0, eq), value = eq == std::string::npos ? "" : item.substr(eq + 1);
    if (key == "checkpoint") s.checkpoint = value;
    else if (key == "image") s.image = ImageSource::parse(value), haveImage = true;
    else if (key == "layer") s.layer = indexValue(key, value);
    else if (key == "head") s.head = indexValue(key, value);
    else throw InvalidArgument("model source: unknown key '" + key + "' (expected checkpoint, image, layer, head)");
  }
  if (s.checkpoint.empty())
    throw InvalidArgument("model source: checkpoint is required, e.g. model:checkpoint=sample_checkpoints/softmax,"
                          "image=fashion-mnist:test:0,layer=5,head=0");
  if (!haveImage) s.image = ImageSource::parse("fashion-mnist:test:0");
  return s;
}

std::string ModelSourceSpec::toString() const {
  return "checkpoint=" + checkpoint + ",image=" + image.toString() + ",layer=" + std::to_string(layer) +
         ",head=" + std::to_string(head);
}

}  // namespace tl
