// streamCopy and writeDenseRows (common/streaming_store.h): every entry lands where it belongs, whatever the
// alignment of the destination (the streamed middle, the plain head and tail), in blocks below the streaming
// threshold (written in place) and above it (through the buffer), on any thread count.
#include "common/streaming_store.h"

#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "common/parallel.h"

namespace tl {
namespace {

template <class T>
void expectCopiesAtEveryAlignment() {
  std::vector<T> from(64);
  std::iota(from.begin(), from.end(), T(1));
  for (std::size_t offset = 0; offset < 4; ++offset)
    for (std::size_t n : {0, 1, 2, 3, 5, 8, 17, 60}) {
      std::vector<T> to(70, T(-1));
      streamCopy(from.data(), to.data() + offset, n);
      finishStreamingStores();
      for (std::size_t i = 0; i < to.size(); ++i) {
        const T expected = i >= offset && i < offset + n ? from[i - offset] : T(-1);
        ASSERT_EQ(to[i], expected) << "offset " << offset << ", n " << n << ", entry " << i;
      }
    }
}

TEST(StreamingStore, CopiesEveryEntryAndNothingElseAtEveryAlignment) {
  expectCopiesAtEveryAlignment<float>();
  expectCopiesAtEveryAlignment<double>();
}

// Entry (r, c) of the block: distinct everywhere, so a row written to the wrong place shows.
template <class T>
T entryOf(Eigen::Index r, Eigen::Index c) {
  return T(r) * T(4099) + T(c);
}

template <class T>
void expectDenseRows(Eigen::Index rows, Eigen::Index cols, bool streamed) {
  ASSERT_EQ(std::size_t(rows * cols) * sizeof(T) > kStreamAboveBytes, streamed) << "the test's premise";
  Mat<T> block = Mat<T>::Constant(rows, cols, T(-1));
  parallelFor(rows, double(rows * cols), [&](Eigen::Index begin, Eigen::Index end) {
    writeDenseRows(block, begin, end, [&](Eigen::Index r, T* row) {
      for (Eigen::Index c = 0; c < cols; ++c) row[c] = entryOf<T>(r, c);
    });
  });
  for (Eigen::Index r = 0; r < rows; ++r)
    for (Eigen::Index c = 0; c < cols; ++c) ASSERT_EQ(block(r, c), (entryOf<T>(r, c))) << r << ", " << c;
}

// An odd column count puts most rows off 16-byte boundaries, so each row has a plain head and tail.
TEST(StreamingStore, DenseRowsBelowTheThresholdAreWrittenInPlace) {
  expectDenseRows<float>(300, 301, false);
  expectDenseRows<double>(300, 301, false);
}

TEST(StreamingStore, DenseRowsAboveTheThresholdAreStreamedWhole) {
  const int threadsBefore = parallelThreads();
  for (int threads : {1, 2}) {
    setParallelThreads(threads);
    expectDenseRows<float>(1031, 4099, true);
    expectDenseRows<double>(1031, 2051, true);
  }
  setParallelThreads(threadsBefore);
}

}  // namespace
}  // namespace tl
