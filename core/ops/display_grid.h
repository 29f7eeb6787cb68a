#pragma once
// The block grid of a plan's display tiles (ops/transport_plan.h PooledPlan): every family's pooling starts
// from it, so all of them cut the axes alike (cuda/tile_index.h blockStart).
#include "ops/transport_plan.h"

namespace tl {

// A rows × cols plan on at most maxRows × maxCols blocks: starts filled, mean and max sized but not set.
template <class T>
PooledPlan<T> displayGrid(Eigen::Index rows, Eigen::Index cols, int maxRows, int maxCols);

}  // namespace tl
