#include "session_files.h"

#include <QFile>

#include "common/errors.h"
#include "io/csv.h"
#include "io/npy.h"

// Q_INIT_RESOURCE must be called outside any namespace; the resources live in a static library.
static void initTransportLensResources() { Q_INIT_RESOURCE(transportlens); }

namespace tl {

Session defaultSession() {
  initTransportLensResources();
  QFile file(":/sessions/default_session.json");
  if (!file.open(QIODevice::ReadOnly)) throw FileError("the built-in default session is missing from the resources");
  const QByteArray bytes = file.readAll();
  try {
    return Session::fromJson(nlohmann::json::parse(bytes.constData(), bytes.constData() + bytes.size()));
  } catch (const nlohmann::json::exception& e) {
    throw FileError(std::string("the built-in default session is not valid JSON: ") + e.what());
  }
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
