#include "widgets/views/view.h"

namespace tl {

const OperatorRun* primaryRun(const SessionResult* result) {
  return (result && !result->runs.empty()) ? &result->runs.front() : nullptr;
}

}  // namespace tl
