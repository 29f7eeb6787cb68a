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
  ParamSpec s;
  s.name = "mask_mode";
  s.type = ParamType::Choice;
  s.defaultValue = std::string("subsequence");
  s.choices = {"subsequence"};
  if (keepQueriesSupported) s.choices.push_back("keep-queries");
  s.description = keepQueriesSupported
                      ? "padding: subsequence = act on valid tokens only; keep-queries = Sinkformer text convention "
                        "(padded keys get no mass, all query rows kept)"
                      : "padding: subsequence = act on valid tokens only";
  return s;
}

}  // namespace tl
