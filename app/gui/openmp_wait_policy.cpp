#include "openmp_wait_policy.h"

#include <cstdlib>
#include <unistd.h>

namespace tl {

void preferPassiveOpenMpWaits(char** argv) {
  if (std::getenv("OMP_WAIT_POLICY")) return;  // the user's choice, or this process already started again
  setenv("OMP_WAIT_POLICY", "passive", /*overwrite=*/0);
  execv("/proc/self/exe", argv);  // returns only on failure: the app then runs with the default policy
}

}  // namespace tl
