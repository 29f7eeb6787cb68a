// The checkpoint commands in a build without LibTorch (TL_TORCH=OFF): one clear line instead of a
// missing command.
#include "commands.h"
#include "common/errors.h"
#include "load_bench.h"
#include "training_bench.h"

namespace tl::cli {
namespace {
[[noreturn]] void unavailable(const std::string& command) {
  throw Error("tlens " + command + " needs the model layer, and this tlens was built without LibTorch "
              "(TL_TORCH=OFF); rebuild with scripts/build, which enables it");
}
}  // namespace

int extractCommand(const Args&) { unavailable("extract"); }
int evalCommand(const Args&) { unavailable("eval"); }
int asapCompileCommand(const Args&) { unavailable("asap-compile"); }
int asapEvalCommand(const Args&) { unavailable("asap-eval"); }
int trainingBench(const CommandLine&) { unavailable("bench --training"); }
int loadBench(const CommandLine&) { unavailable("bench --load"); }

}  // namespace tl::cli
