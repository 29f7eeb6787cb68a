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

// A tile of `rows` < Rows rows: the tile shape with exactly that many rows (a row at a time would load each
// packet of B for one row's multiply-adds only).
template <class T, int Rows, int Packets>
void partialTile(int rows, const T* a, Index lda, Index k0, Index k1, Index inner, const T* b, Index ldb, T scale,
                 T* out, Index ldo) {
  if constexpr (Rows > 1) {
    if (rows == Rows - 1) return tile<T, Rows - 1, Packets>(a, lda, k0, k1, inner, b, ldb, scale, out, ldo);
    return partialTile<T, Rows - 1, Packets>(rows, a, lda, k0, k1, inner, b, ldb, scale, out, ldo);
  }
}

// Columns [j0, j1) of rows [first, end) over k in [k0, k1), in tiles of Rows × Packets packets, the last rows
// in one shorter tile.
template <class T, int Rows, int Packets>
void tiles(const Mat<T>& A, const Mat<T>& B, Index first, Index end, Index j0, Index j1, Index k0, Index k1,
           T scale, Mat<T>& X) {
  constexpr Index width = Packets * Eigen::internal::packet_traits<T>::size;
  const Index inner = A.cols();
  const Index full = first + (end - first) / Rows * Rows;
  for (Index i = first; i < full; i += Rows)
    for (Index j = j0; j + width <= j1; j += width)
      tile<T, Rows, Packets>(&A(i, 0), A.cols(), k0, k1, inner, &B(0, j), B.cols(), scale, &X(i, j), X.cols());
  if (full < end)
    for (Index j = j0; j + width <= j1; j += width)
      partialTile<T, Rows, Packets>(int(end - full), &A(full, 0), A.cols(), k0, k1, inner, &B(0, j), B.cols(), scale,
                                    &X(full, j), X.cols());
}

// The last columns of X, fewer than a packet: whole packets of the zero-padded B into a small buffer, of which
// the real columns are copied.
template <class T, int Rows>
void lastColumns(const Mat<T>& A, const Mat<T>& B, Index first, Index end, Index j0, T scale, Mat<T>& X) {
  constexpr Index W = Eigen::internal::packet_traits<T>::size;
  const Index count = X.cols() - j0, inner = A.cols();
  T buffer[Rows * W];
  for (Index i = first; i < end; i += Rows) {
    const Index rows = std::min<Index>(Rows, end - i);
    if (rows == Rows) tile<T, Rows, 1>(&A(i, 0), A.cols(), 0, inner, inner, &B(0, j0), B.cols(), scale, buffer, W);
    else partialTile<T, Rows, 1>(int(rows), &A(i, 0), A.cols(), 0, inner, inner, &B(0, j0), B.cols(), scale, buffer, W);
    for (Index r = 0; r < rows; ++r) std::copy(buffer + r * W, buffer + r * W + count, &X(i + r, j0));
  }
}

}  // namespace row_product_detail

// B as productRows reads it: zero-padded on the right to whole packets, so that the last columns are read as
// whole packets too. Formed once per product and shared by every thread.
template <class Derived>
Mat<typename Derived::Scalar> paddedColumns(const Eigen::MatrixBase<Derived>& B) {
  using T = typename Derived::Scalar;
  constexpr Eigen::Index W = Eigen::internal::packet_traits<T>::size;
  Mat<T> padded = Mat<T>::Zero(B.rows(), (B.cols() + W - 1) / W * W);
  padded.leftCols(B.cols()) = B;
  return padded;
}

// Rows [first, end) of X = scale · A B, from paddedB = paddedColumns(B); X has B's columns. B is walked in
// pieces of at most kInnerChunk rows × as many columns as fit about 256 KiB, which stay in the core's L2 cache
// while every tile of rows passes over them; a sum carried from one piece of rows of B to the next continues in
// X, in the same order as without the pieces.
template <class T>
void productRows(const Mat<T>& A, const Mat<T>& paddedB, Eigen::Index first, Eigen::Index end, T scale, Mat<T>& X) {
  using namespace row_product_detail;
  constexpr Index W = Eigen::internal::packet_traits<T>::size, width = kPackets * W, kInnerChunk = 512;
  constexpr std::size_t kPieceBytes = std::size_t(256) << 10;
  const Index n = X.cols(), inner = A.cols();
  const Index innerChunk = std::max<Index>(std::min(inner, kInnerChunk), 1);
  const Index chunk = std::max<Index>(width, Index(kPieceBytes / (sizeof(T) * std::size_t(innerChunk))) / width * width);
  const Index wide = n / width * width, packed = n / W * W;  // columns the full tiles, the whole packets cover
  const Index pieces = std::max<Index>(1, (inner + innerChunk - 1) / innerChunk);  // 1 when inner = 0: X = 0
  for (Index j0 = 0; j0 < wide; j0 += chunk)
    for (Index p = 0; p < pieces; ++p)
      tiles<T, kRows, kPackets>(A, paddedB, first, end, j0, std::min(wide, j0 + chunk), p * innerChunk,
                                std::min(inner, (p + 1) * innerChunk), scale, X);
  for (Index p = 0; p < pieces; ++p)
    tiles<T, kRows, 1>(A, paddedB, first, end, wide, packed, p * innerChunk, std::min(inner, (p + 1) * innerChunk), scale, X);
  if (packed < n) lastColumns<T, kRows>(A, paddedB, first, end, packed, scale, X);
}

// A B, its rows split across threads in blocks of 64.
template <class T>
Mat<T> rowProduct(const Mat<T>& A, const Mat<T>& B) {
  constexpr Eigen::Index kBlockRows = 64;
  Mat<T> X(A.rows(), B.cols());
  const Mat<T> paddedB = paddedColumns(B);
  const Eigen::Index blocks = (A.rows() + kBlockRows - 1) / kBlockRows;
  parallelFor(blocks, double(A.rows()) * double(A.cols()) * double(B.cols()), [&](Eigen::Index b0, Eigen::Index b1) {
    productRows(A, paddedB, b0 * kBlockRows, std::min(A.rows(), b1 * kBlockRows), T(1), X);
  });
  return X;
}

}  // namespace tl
