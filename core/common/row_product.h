#pragma once
// Dense products X = scale · A B whose B is thin or shared: the scores QKᵀ (inner dimension d = 64, an n_q × n_k
// result) and the outputs A V of n × n plans (inner dimension n_k, 64 columns). Rows of X are computed in
// blocks, each block by one thread, each entry summed in registers and stored once.
//
// Why not Eigen's product: for QKᵀ, Eigen repacks Kᵀ for every block of rows, zeroes the output block and then
// adds the product into it; on the development Xeon (AVX-512, 213 GFLOP/s per core at peak) it reached 150–170
// GFLOP/s on two cores at n = 4096 in float and 52–55 in double. Here B is laid out once per product and shared
// by every thread, and each tile of kRows × kPackets packets of X is summed in registers and stored once:
// 8.5–9.2 vs 12.4–13.6 ms in float and 17 vs 40 ms in double for QKᵀ at n = 4096, d = 64, two threads (AVX2
// build: 13.5 vs 16.5 and 28 vs 45 ms).
//
// Each entry of X is the same chain of multiply-adds over the inner index, in order, whatever the tile, the
// block or the thread, so results are the same bits on any thread count.
#include <algorithm>
#include <cstddef>

#include "common/matrix.h"
#include "common/parallel.h"

namespace tl {
namespace row_product_detail {

using Eigen::Index;

// A tile as large as the vector registers allow (accumulators, a row of B's packets and a broadcast):
// 6 × 4 packets with 32 registers (AVX-512), 4 × 3 with 16 (AVX2, SSE). Both were the fastest of the shapes
// tried on their instruction set.
constexpr int kRows = EIGEN_ARCH_DEFAULT_NUMBER_OF_REGISTERS >= 32 ? 6 : 4;
constexpr int kPackets = EIGEN_ARCH_DEFAULT_NUMBER_OF_REGISTERS >= 32 ? 4 : 3;

// The address of entry (i, j) of a row-major matrix by arithmetic, not through operator(): A has no columns when
// the inner dimension is 0, and binding a reference to its (null) first entry is undefined behaviour.
template <class Matrix>
auto entryPointer(Matrix& m, Index i, Index j) {
  return m.data() + i * m.cols() + j;
}

// Adds Σ_k a[r·lda + k] · b[k·ldb + c·W …] over k in [k0, k1) to out[r·ldo + c·W …] for r < Rows, c < Packets
// (W the packet size): from 0 when k0 = 0 (out is not read), and the total times `scale` when k1 = inner.
template <class T, int Rows, int Packets>
inline void tile(const T* a, Index lda, Index k0, Index k1, Index inner, const T* b, Index ldb, T scale, T* out,
                 Index ldo) {
  using namespace Eigen::internal;
  using Packet = typename packet_traits<T>::type;
  constexpr Index W = packet_traits<T>::size;
  Packet sum[Rows][Packets];
  for (int r = 0; r < Rows; ++r)
    for (int c = 0; c < Packets; ++c) sum[r][c] = k0 == 0 ? pset1<Packet>(T(0)) : ploadu<Packet>(out + r * ldo + c * W);
  for (Index k = k0; k < k1; ++k) {
    Packet row[Packets];
    for (int c = 0; c < Packets; ++c) row[c] = ploadu<Packet>(b + k * ldb + c * W);
    for (int r = 0; r < Rows; ++r) {
      const Packet x = pset1<Packet>(a[r * lda + k]);
      for (int c = 0; c < Packets; ++c) sum[r][c] = pmadd(x, row[c], sum[r][c]);
    }
  }
  const Packet s = pset1<Packet>(k1 == inner ? scale : T(1));
  for (int r = 0; r < Rows; ++r)
    for (int c = 0; c < Packets; ++c) pstoreu(out + r * ldo + c * W, pmul(sum[r][c], s));
}

// A tile of `rows` ≤ Rows rows: the tile shape with exactly that many rows (a row at a time would load each
// packet of B for one row's multiply-adds only).
template <class T, int Rows, int Packets>
void tileOfRows(int rows, const T* a, Index lda, Index k0, Index k1, Index inner, const T* b, Index ldb, T scale,
                T* out, Index ldo) {
  if (rows == Rows) return tile<T, Rows, Packets>(a, lda, k0, k1, inner, b, ldb, scale, out, ldo);
  if constexpr (Rows > 1) tileOfRows<T, Rows - 1, Packets>(rows, a, lda, k0, k1, inner, b, ldb, scale, out, ldo);
}

// B's columns in panels of kPackets packets, each panel's inner × width entries contiguous (row-major), the last
// panel zero-padded: a tile then reads one contiguous stretch of B. Read in place, a tile's rows of B lie a whole
// row of B apart (16 KiB for the keys at n = 4096), which maps them all to the same few L1 cache sets.
template <class T>
struct ProductPanels {
  static constexpr Index kWidth = kPackets * Eigen::internal::packet_traits<T>::size;
  Mat<T> data;  // panel p's row k is row p·inner + k
  Index inner = 0, cols = 0;
  const T* at(Index panel, Index k) const { return data.data() + (panel * inner + k) * kWidth; }
};

// Columns [p0, p1) of the full panels, rows [first, end), k in [k0, k1): tiles of kRows × kPackets packets, the
// last rows in one shorter tile.
template <class T, class Out>
void tiles(const Mat<T>& A, const ProductPanels<T>& B, Index first, Index end, Index p0, Index p1, Index k0, Index k1,
           T scale, Out& X) {
  constexpr Index width = ProductPanels<T>::kWidth;
  for (Index i = first; i < end; i += kRows)
    for (Index p = p0; p < p1; ++p)
      tileOfRows<T, kRows, kPackets>(int(std::min<Index>(kRows, end - i)), entryPointer(A, i, 0), A.cols(), k0, k1,
                                     B.inner, B.at(p, 0), width, scale, entryPointer(X, i, p * width), X.cols());
}

// The last, partial panel: whole tiles into a small buffer, of which the real columns are copied.
template <class T, class Out>
void lastPanel(const Mat<T>& A, const ProductPanels<T>& B, Index first, Index end, T scale, Out& X) {
  constexpr Index width = ProductPanels<T>::kWidth;
  const Index panel = B.cols / width, j0 = panel * width, count = B.cols - j0;
  T buffer[kRows * width];
  for (Index i = first; i < end; i += kRows) {
    const Index rows = std::min<Index>(kRows, end - i);
    tileOfRows<T, kRows, kPackets>(int(rows), entryPointer(A, i, 0), A.cols(), 0, B.inner, B.inner, B.at(panel, 0),
                                   width, scale, buffer, width);
    for (Index r = 0; r < rows; ++r)
      std::copy(buffer + r * width, buffer + r * width + count, entryPointer(X, i + r, j0));
  }
}

}  // namespace row_product_detail

using row_product_detail::ProductPanels;

// B laid out for productRows, once per product and shared by every thread.
template <class Derived>
ProductPanels<typename Derived::Scalar> productPanels(const Eigen::MatrixBase<Derived>& B) {
  using T = typename Derived::Scalar;
  constexpr Eigen::Index width = ProductPanels<T>::kWidth;
  ProductPanels<T> panels;
  panels.inner = B.rows();
  panels.cols = B.cols();
  const Eigen::Index count = (B.cols() + width - 1) / width;
  panels.data = Mat<T>::Zero(count * B.rows(), width);
  for (Eigen::Index p = 0; p < count; ++p) {
    const Eigen::Index columns = std::min(width, B.cols() - p * width);
    panels.data.middleRows(p * B.rows(), B.rows()).leftCols(columns) = B.middleCols(p * width, columns);
  }
  return panels;
}

// Rows [first, end) of X = scale · A B, from B's productPanels; X (a row-major matrix or a map of one) has B's
// columns. B is walked in pieces of at most kInnerChunk rows × as many panels as fit about 256 KiB, which stay in
// the core's L2 cache while every tile of rows passes over them; a sum carried from one piece of rows of B to the
// next continues in X, in the same order as without the pieces.
template <class T, class Out>
void productRows(const Mat<T>& A, const ProductPanels<T>& B, Eigen::Index first, Eigen::Index end, T scale, Out& X) {
  using namespace row_product_detail;
  constexpr Index width = ProductPanels<T>::kWidth, kInnerChunk = 512;
  constexpr std::size_t kPieceBytes = std::size_t(256) << 10;
  const Index innerChunk = std::max<Index>(std::min(B.inner, kInnerChunk), 1);
  const Index panelsPerPiece = std::max<Index>(1, Index(kPieceBytes / (sizeof(T) * std::size_t(innerChunk * width))));
  const Index fullPanels = B.cols / width;
  const Index pieces = std::max<Index>(1, (B.inner + innerChunk - 1) / innerChunk);  // 1 when inner = 0: X = 0
  for (Index p0 = 0; p0 < fullPanels; p0 += panelsPerPiece)
    for (Index piece = 0; piece < pieces; ++piece)
      tiles(A, B, first, end, p0, std::min(fullPanels, p0 + panelsPerPiece), piece * innerChunk,
            std::min(B.inner, (piece + 1) * innerChunk), scale, X);
  if (fullPanels * width < B.cols) lastPanel(A, B, first, end, scale, X);
}

// A B, its rows split across threads.
template <class T>
Mat<T> rowProduct(const Mat<T>& A, const Mat<T>& B) {
  Mat<T> X(A.rows(), B.cols());
  const ProductPanels<T> panels = productPanels(B);
  const double work = double(A.rows()) * double(A.cols()) * double(B.cols());
  parallelFor(A.rows(), work, [&](Eigen::Index first, Eigen::Index end) { productRows(A, panels, first, end, T(1), X); });
  return X;
}

}  // namespace tl
