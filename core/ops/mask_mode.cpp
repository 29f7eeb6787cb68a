#include "ops/mask_mode.h"

#include "common/errors.h"

namespace tl {

MaskMode parseMaskMode(const std::string& text) {
  if (text == "subsequence") return MaskMode::Subsequence;
  if (text == "keep-queries") return MaskMode::KeepQueries;
  throw InvalidArgument("mask_mode = '" + text + "' is not valid; expected subsequence or keep-queries");
}

const char* maskModeName(MaskMode mode) { return mode == MaskMode::Subsequence ? "subsequence" : "keep-queries"; }

ParamSpec maskModeSpec(bool keepQueriesSupported) {
  if (!keepQueriesSupported)
    return choiceParam("mask_mode", {"subsequence"}, "padding: subsequence = act on valid tokens only");
  return choiceParam("mask_mode", {"subsequence", "keep-queries"},
                     "padding: subsequence = act on valid tokens only; keep-queries = Sinkformer text convention "
                     "(padded keys get no mass, all query rows kept)");
}

}  // namespace tl
