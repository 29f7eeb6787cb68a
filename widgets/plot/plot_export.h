#pragma once
// Export of QCustomPlot figures. Each format is rendered into memory first and then written with
// tl::writeFileAtomically, so a failed export never leaves a half-written file.
#include <QByteArray>
#include <string>

#include "session/session.h"

class QCustomPlot;

namespace tl {

// png: width×height logical pixels at settings.scale; svg and pdf: vector, width×height points.
QByteArray renderPlot(QCustomPlot& plot, const std::string& format, const ExportSettings& settings);
void exportPlot(QCustomPlot& plot, const std::string& path, const std::string& format,
                const ExportSettings& settings);

}  // namespace tl
