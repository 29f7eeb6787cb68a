// rowProduct / productRows (common/row_product.h) against a long-double product, on shapes that exercise every
// edge of the tiling: rows that are not a multiple of the tile's rows, columns that end in part of a packet,
// inner dimensions of 0, 1 and beyond one piece (512), columns beyond one L2 chunk; the same bits on any thread
// count, and rows outside [first, end) left alone.
#include "common/row_product.h"

#include <gtest/gtest.h>

#include <cmath>
#include <tuple>

#include "common/parallel.h"
#include "support/test_util.h"

namespace tl {
namespace {

// |X − A B| ≤ 4 · inner · u · (|A| |B|) entry by entry (u the unit roundoff of T): the textbook bound of a
// sequential dot product, which a wrong index or a missed term exceeds by orders of magnitude.
template <class T>
::testing::AssertionResult productNear(const Mat<T>& A, const Mat<T>& B, T scale, const Mat<T>& X) {
  const T u = std::numeric_limits<T>::epsilon() / 2;
  for (Eigen::Index i = 0; i < A.rows(); ++i)
    for (Eigen::Index j = 0; j < B.cols(); ++j) {
      long double exact = 0, magnitude = 0;
      for (Eigen::Index k = 0; k < A.cols(); ++k) {
        exact += static_cast<long double>(A(i, k)) * B(k, j);
        magnitude += std::fabs(static_cast<long double>(A(i, k)) * B(k, j));
      }
      const long double bound = (4 * (A.cols() + 1) * u) * magnitude * std::fabs(scale);
      if (std::fabs(X(i, j) - exact * scale) > bound)
        return ::testing::AssertionFailure() << "entry (" << i << ", " << j << ") is " << X(i, j) << ", expected "
                                             << double(exact * scale) << " within " << double(bound);
    }
  return ::testing::AssertionSuccess();
}

template <class T>
void expectProducts() {
  for (const auto& [rows, inner, cols] :
       {std::tuple{1, 1, 1}, std::tuple{7, 3, 17}, std::tuple{13, 64, 63}, std::tuple{6, 64, 64},
        std::tuple{65, 64, 1100}, std::tuple{11, 0, 20}, std::tuple{29, 1100, 64}, std::tuple{5, 513, 33}}) {
    SCOPED_TRACE(::testing::Message() << rows << " x " << inner << " times " << inner << " x " << cols);
    const Mat<T> A = test::gaussian(rows, inner, 41).template cast<T>();
    const Mat<T> B = test::gaussian(inner, cols, 42).template cast<T>();
    EXPECT_TRUE(productNear<T>(A, B, T(1), rowProduct(A, B)));
    // Rows [first, end) only, scaled; the rows around them keep what they held.
    const Eigen::Index first = rows / 3, end = rows - rows / 4;
    Mat<T> X = Mat<T>::Constant(rows, cols, T(7));
    productRows(A, productPanels(B), first, end, T(0.125), X);
    const Eigen::Index count = end - first;
    EXPECT_TRUE(productNear<T>(A.middleRows(first, count), B, T(0.125), X.middleRows(first, count)));
    EXPECT_TRUE((X.topRows(first).array() == T(7)).all());
    EXPECT_TRUE((X.bottomRows(rows - end).array() == T(7)).all());
  }
}

TEST(RowProduct, MatchesTheExactProductInFloat) { expectProducts<float>(); }
TEST(RowProduct, MatchesTheExactProductInDouble) { expectProducts<double>(); }

TEST(RowProduct, SameBitsOnAnyThreadCount) {
  const int threadsBefore = parallelThreads();
  const MatD A = test::gaussian(301, 700, 43), B = test::gaussian(700, 70, 44);
  setParallelThreads(1);
  const MatD one = rowProduct(A, B);
  setParallelThreads(2);
  const MatD two = rowProduct(A, B);
  setParallelThreads(threadsBefore);
  EXPECT_TRUE(test::matricesIdentical(one, two));
}

}  // namespace
}  // namespace tl
