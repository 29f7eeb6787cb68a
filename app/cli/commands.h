#pragma once
// The `tlens` subcommands. Each takes the arguments after its name, returns the exit status, and throws
// tl::Error subclasses for main() to report (InvalidArgument → 2, everything else → 1).
#include <string>
#include <vector>

namespace tl::cli {

using Args = std::vector<std::string>;

int planCommand(const Args& args);
int gradCommand(const Args& args);     // banded only
int certifyCommand(const Args& args);  // banded only
int compareCommand(const Args& args);
int renderCommand(const Args& args);
int benchCommand(const Args& args);
int trainCommand(const Args& args);
int rankDecayCommand(const Args& args);
int asapFitCommand(const Args& args);
// Checkpoint commands: built with LibTorch (TL_TORCH); otherwise they say so.
int extractCommand(const Args& args);
int evalCommand(const Args& args);
int asapCompileCommand(const Args& args);
int asapEvalCommand(const Args& args);

// Help blocks generated from the registries, so a new family or generator needs no CLI change.
std::string operatorsHelp();  // every family with describeSchema() of its parameters
std::string sourcesHelp();    // every synthetic generator with its parameters, plus the file form

}  // namespace tl::cli
