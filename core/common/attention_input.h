#pragma once
// The one input every operator consumes: queries, keys, values and an optional key mask for one head.
#include <optional>
#include <string>
#include <vector>

#include "common/matrix.h"

namespace tl {

template <class T>
struct AttentionInput {
  Mat<T> Q;                  // n_q × d
  Mat<T> K;                  // n_k × d
  std::optional<Mat<T>> V;   // n_k × d_v; absent when only the plan is wanted
  std::optional<Mask> mask;  // length n; self-attention padding (same tokens on both sides), true = valid

  int nQueries() const { return int(Q.rows()); }
  int nKeys() const { return int(K.rows()); }
  int headDim() const { return int(Q.cols()); }

  template <class To>
  AttentionInput<To> cast() const {
    AttentionInput<To> out;
    out.Q = Q.template cast<To>();
    out.K = K.template cast<To>();
    if (V) out.V = V->template cast<To>();
    out.mask = mask;
    return out;
  }
};

// Several heads of one layer (or one head of many layers); each runs independently.
template <class T>
using AttentionBatch = std::vector<AttentionInput<T>>;

// Throws InvalidArgument naming the offending tensor when shapes disagree, a tensor is empty, or any
// entry is NaN/Inf. Every operator calls this before it computes.
template <class T>
void validateInput(const AttentionInput<T>& input);

}  // namespace tl
