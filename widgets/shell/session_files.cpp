#include "widgets/shell/session_files.h"

#include <QFile>
#include <filesystem>

#include "common/errors.h"
#include "io/csv.h"
#include "io/npy.h"
#include "vit/model_backend.h"

// Q_INIT_RESOURCE must be called outside any namespace; the resources live in a static library.
static void initTransportLensResources() { Q_INIT_RESOURCE(transportlens); }

namespace tl {

namespace {
Session builtinSession(const QString& name, const std::string& baseDir) {
  initTransportLensResources();
  QFile file(":/sessions/" + name);
  if (!file.open(QIODevice::ReadOnly))
    throw FileError("the built-in session " + name.toStdString() + " is missing from the resources");
  const QByteArray bytes = file.readAll();
  try {
    return Session::fromJson(nlohmann::json::parse(bytes.constData(), bytes.constData() + bytes.size()), baseDir);
  } catch (const nlohmann::json::exception& e) {
    throw FileError("the built-in session " + name.toStdString() + " is not valid JSON: " + e.what());
  }
}
}  // namespace

Session pointCloudSession() { return builtinSession("cloud_session.json", ""); }

Session checkpointSession() { return builtinSession("checkpoint_session.json", TL_SOURCE_DIR "/resources"); }

Session defaultSession() {
  if (haveModelBackend()) {
    Session session = checkpointSession();
    if (std::filesystem::exists(session.source.model.checkpoint)) return session;
  }
  return pointCloudSession();
}

void exportPlan(const MatD& plan, const std::string& path) {
  auto endsWith = [&](const char* suffix) {
    const std::string s(suffix);
    return path.size() >= s.size() && path.compare(path.size() - s.size(), s.size(), s) == 0;
  };
  if (plan.size() == 0) throw InvalidArgument("there is no dense plan to export (the operator ran lazily)");
  if (endsWith(".npy")) writeNpy<double>(path, plan);
  else if (endsWith(".csv")) writeCsv(path, plan);
  else throw InvalidArgument("plan exports are .npy or .csv files, not '" + path + "'");
}

}  // namespace tl
