#include "vit/model_backend.h"

#include <mutex>

#include "common/errors.h"

namespace tl {
namespace {
std::mutex backendMutex;
std::shared_ptr<ModelBackend>& installed() {
  static std::shared_ptr<ModelBackend> backend;
  return backend;
}
}  // namespace

void installModelBackend(std::shared_ptr<ModelBackend> backend) {
  std::lock_guard<std::mutex> lock(backendMutex);
  installed() = std::move(backend);
}

ModelBackend& modelBackend() {
  std::lock_guard<std::mutex> lock(backendMutex);
  if (!installed())
    throw Error("model checkpoints need the model layer, and this TransportLens was built without LibTorch "
                "(TL_TORCH=OFF); rebuild with scripts/build, which enables it");
  return *installed();
}

bool haveModelBackend() {
  std::lock_guard<std::mutex> lock(backendMutex);
  return installed() != nullptr;
}

}  // namespace tl
