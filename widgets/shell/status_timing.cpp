#include "widgets/shell/status_timing.h"

#include <QCoreApplication>

namespace tl {

StatusTiming statusTiming(const SessionResult& result, double drawMs) {
  const auto tr = [](const char* text) { return QCoreApplication::translate("StatusTiming", text); };
  const PlanResult<double>& r = result.runs.front().result;
  const QString runMs = QString::number(r.seconds * 1e3, 'f', 1);
  const QString requestMs = QString::number(result.seconds * 1e3, 'f', 1);
  const QString draw = QString::number(drawMs, 'f', 1);
  if (r.backend == Backend::Cuda)  // the GPU computes in float32 whatever the session asks (docs/cuda.md)
    return {tr("f32 · GPU %1 ms · draw %2 ms").arg(runMs, draw),
            tr("computed on the GPU in float32; the device run took %1 ms (uploads, kernels, downloads, and the "
               "host's steps between launches); the whole request (source, operators, analyses) took %2 ms; drawing "
               "the views took %3 ms, which includes display tiles of large plans computed on the GPU")
                .arg(runMs, requestMs, draw)};
  const QString precision = QString::fromLatin1(precisionName(result.session.precision));
  return {tr("%1 · compute %2 ms · draw %3 ms").arg(precision, runMs, draw),
          tr("precision the operator ran in; its compute time; the whole request (source, operators, analyses) took "
             "%1 ms; drawing the views on screen took %2 ms")
              .arg(requestMs, draw)};
}

}  // namespace tl
