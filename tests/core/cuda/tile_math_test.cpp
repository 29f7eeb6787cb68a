// The kernels' host-device arithmetic (core/cuda/*.h), compiled by g++, against straightforward CPU formulas
// and the CPU reference in core/ops: online log-sum-exp, half-step closure and errors, tile and display-block
// indexing, element conversion, TF32 rounding and the TF32 tiles' fragment layout.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <set>
#include <vector>

#include "cuda/element_convert.h"
#include "cuda/half_step.h"
#include "cuda/kernel_sets.h"
#include "cuda/online_lse.h"
#include "cuda/tf32_tile.h"
#include "cuda/tile_index.h"
#include "io/checkpoint/half_float.h"
#include "ops/log_domain.h"
#include "ops/marginals.h"
#include "support/test_util.h"

namespace tl::cuda {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

std::vector<float> randomTerms(int n, uint64_t seed, double scale, double maskedShare) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, scale);
  std::uniform_real_distribution<double> u01(0.0, 1.0);
  std::vector<float> x(static_cast<size_t>(n));
  for (auto& v : x) v = u01(rng) < maskedShare ? kNegInf : float(normal(rng));
  return x;
}

// log Σ exp in double, straight from the definition (max-subtracted).
double directLse(const std::vector<float>& x) {
  double m = -std::numeric_limits<double>::infinity();
  for (float v : x) m = std::max(m, double(v));
  if (std::isinf(m)) return m;
  double s = 0;
  for (float v : x) s += std::exp(double(v) - m);
  return m + std::log(s);
}

OnlineLse lseOf(const std::vector<float>& x, size_t first, size_t last) {
  OnlineLse s;
  for (size_t i = first; i < last; ++i) s.add(x[i]);
  return s;
}

// ---------------------------------------------------------------------------------------------------------
// Online LSE

TEST(OnlineLse, TermByTermMatchesTheCpuRowLogSumExp) {
  for (int n : {1, 2, 7, 64, 1000})
    for (double masked : {0.0, 0.5}) {
      SCOPED_TRACE(::testing::Message() << "n=" << n << " masked=" << masked);
      const std::vector<float> x = randomTerms(n, 17 + n, 10.0, masked);
      Mat<float> row(1, n);
      for (int j = 0; j < n; ++j) row(0, j) = x[size_t(j)];
      const float cpu = rowLogSumExp<float>(row, Vec<float>::Zero(n))(0);
      const float online = lseOf(x, 0, x.size()).finalize();
      if (std::isinf(cpu)) {
        EXPECT_EQ(online, cpu);
      } else {
        EXPECT_NEAR(online, cpu, 4e-6 * std::max(1.0f, std::abs(cpu)));
        EXPECT_NEAR(online, directLse(x), 4e-6 * std::max(1.0, std::abs(directLse(x))));
      }
    }
}

TEST(OnlineLse, TilesOfEightMatchTermByTerm) {
  const std::vector<float> x = randomTerms(8 * 37, 5, 30.0, 0.3);
  OnlineLse tiled;
  for (size_t t = 0; t < x.size(); t += 8) {
    float tile[8];
    std::copy(x.begin() + long(t), x.begin() + long(t) + 8, tile);
    tiled.addTile(tile);
  }
  EXPECT_NEAR(tiled.finalize(), lseOf(x, 0, x.size()).finalize(), 2e-5);
  EXPECT_NEAR(tiled.finalize(), directLse(x), 2e-5);
}

TEST(OnlineLse, MergeIsIndependentOfSplitAndOrder) {
  const std::vector<float> x = randomTerms(500, 9, 20.0, 0.2);
  const double exact = directLse(x);
  std::mt19937_64 rng(3);
  for (int trial = 0; trial < 50; ++trial) {
    // Random cut points, states merged in a random order.
    std::vector<size_t> cuts = {0, x.size()};
    for (int c = 0; c < 1 + trial % 9; ++c) cuts.push_back(size_t(rng() % x.size()));
    std::sort(cuts.begin(), cuts.end());
    std::vector<OnlineLse> parts;
    for (size_t c = 0; c + 1 < cuts.size(); ++c) parts.push_back(lseOf(x, cuts[c], cuts[c + 1]));
    std::shuffle(parts.begin(), parts.end(), rng);
    OnlineLse total;
    for (const auto& p : parts) total.merge(p);
    EXPECT_NEAR(total.finalize(), exact, 1e-5 * std::max(1.0, std::abs(exact)));
  }
}

TEST(OnlineLse, MergeIsCommutative) {
  const std::vector<float> x = randomTerms(40, 21, 5.0, 0.0);
  OnlineLse a = lseOf(x, 0, 13), b = lseOf(x, 13, 40);
  OnlineLse ab = a, ba = b;
  ab.merge(b);
  ba.merge(a);
  EXPECT_EQ(ab.m, ba.m);                       // the larger max wins either way
  EXPECT_NEAR(ab.s, ba.s, 1e-6 * ab.s);        // equal up to how the compiler fuses the two products
  EXPECT_NEAR(ab.finalize(), directLse(x), 1e-5);
}

TEST(OnlineLse, AllMaskedGivesMinusInfinityNeverNaN) {
  OnlineLse s;
  EXPECT_EQ(s.finalize(), kNegInf);  // nothing seen
  s.add(kNegInf);
  float tile[4] = {kNegInf, kNegInf, kNegInf, kNegInf};
  s.addTile(tile);
  EXPECT_EQ(s.m, kNegInf);
  EXPECT_EQ(s.s, 0.f);
  EXPECT_EQ(s.finalize(), kNegInf);
  OnlineLse empty;
  s.merge(empty);
  EXPECT_EQ(s.finalize(), kNegInf);
  EXPECT_FALSE(std::isnan(s.s));
}

TEST(OnlineLse, MaskedStatesDoNotDisturbFiniteOnes) {
  OnlineLse finite;
  finite.add(1.5f);
  finite.add(-2.f);
  const float expected = finite.finalize();
  OnlineLse masked;
  masked.add(kNegInf);
  OnlineLse a = finite, b = masked;
  a.merge(masked);  // finite ← masked
  b.merge(finite);  // masked ← finite
  EXPECT_EQ(a.finalize(), expected);
  EXPECT_EQ(b.finalize(), expected);
  // A tile whose first terms are masked and later ones finite, after an all-masked start.
  OnlineLse c;
  float tile[4] = {kNegInf, 1.5f, kNegInf, -2.f};
  c.addTile(tile);
  EXPECT_NEAR(c.finalize(), expected, 1e-6);
}

TEST(OnlineLse, LargeScoresDoNotOverflow) {
  OnlineLse s;
  s.add(80.f);
  s.add(85.f);  // exp(85) overflows float; the state never forms it
  EXPECT_NEAR(s.finalize(), 85.0 + std::log1p(std::exp(-5.0)), 1e-5);
  EXPECT_TRUE(std::isfinite(s.s));
  EXPECT_EQ(safeMax(kNegInf), 0.f);
  EXPECT_EQ(safeMax(3.f), 3.f);
}

// ---------------------------------------------------------------------------------------------------------
// Half-step closure, sums and errors (core/ops/sinkhorn/sinkhorn_loop.h)

TEST(HalfStep, ClosureKeepsInactiveTokensAtMinusInfinity) {
  EXPECT_EQ(closure(kNegInf, 3.f), kNegInf);
  EXPECT_EQ(closure(kNegInf, kNegInf), kNegInf);  // not NaN
  EXPECT_FLOAT_EQ(closure(-std::log(7.f), 2.5f), -std::log(7.f) - 2.5f);
  EXPECT_EQ(closure(-1.f, kNegInf), std::numeric_limits<float>::infinity());  // as the CPU: −1 − (−inf)
}

TEST(HalfStep, SumsTargetsAndPlanEntriesFollowTheCpuFormulas) {
  const float scale = 7.f, logMu = -std::log(7.f);
  // Closing side: the sum of the closed potential reproduces the target.
  const float lse = 4.25f, closed = closure(logMu, lse);
  EXPECT_NEAR(marginalSum(closed, lse, scale), 1.f, 1e-6);
  EXPECT_EQ(marginalSum(kNegInf, lse, scale), 0.f);
  EXPECT_EQ(marginalSum(kNegInf, kNegInf, scale), 0.f);  // not NaN
  EXPECT_NEAR(marginalTarget(logMu, scale), 1.f, 1e-6);
  EXPECT_EQ(marginalTarget(kNegInf, scale), 0.f);
  // Plan entry: scale·exp((x + ut) + vt) with the CPU's order of additions, bit for bit.
  const float x = 1.37f, ut = -3.1f, vt = 0.77f;
  EXPECT_EQ(planEntry(x, ut, vt, scale), scale * std::exp((x + ut) + vt));
  EXPECT_EQ(planEntry(x, kNegInf, vt, scale), 0.f);
  EXPECT_EQ(planEntry(x, ut, kNegInf, scale), 0.f);
}

TEST(HalfStep, ErrorAccumulatorMatchesSideError) {
  std::mt19937_64 rng(11);
  std::normal_distribution<float> normal(1.f, 0.1f);
  Vec<float> sums(1000), target(1000);
  SideErrorAccumulator a, b;
  for (int i = 0; i < 1000; ++i) {
    sums(i) = normal(rng);
    target(i) = i % 5 == 0 ? 0.f : 1.f;
    (i < 400 ? a : b).add(sums(i), target(i));
  }
  a.merge(b);
  const SideError cpu = sideError<float>(sums, target);
  EXPECT_EQ(a.max, cpu.max);
  EXPECT_NEAR(a.mean(1000), cpu.mean, 1e-12);
  SideErrorAccumulator nan;
  nan.add(std::nanf(""), 1.f);
  EXPECT_TRUE(std::isnan(nan.max));  // a NaN deviation shows in the max
}

// ---------------------------------------------------------------------------------------------------------
// Tile and display-block indexing

TEST(TileIndex, MicroIndexCoversEveryTileIndexOnce) {
  struct Config {
    int TM, threads;
  };
  for (Config c : {Config{8, 16}, Config{4, 16}, Config{2, 8}, Config{1, 32}}) {
    SCOPED_TRACE(::testing::Message() << "TM=" << c.TM << " threads=" << c.threads);
    std::set<int> seen;
    for (int t = 0; t < c.threads; ++t)
      for (int r = 0; r < c.TM; ++r) {
        const int idx = microIndex(t, r, c.TM, c.threads);
        EXPECT_GE(idx, 0);
        EXPECT_LT(idx, c.TM * c.threads);
        seen.insert(idx);
        if (c.TM >= 4 && r % 4 == 0) {
          EXPECT_EQ(idx % 4, 0) << "16-byte vectors start at multiples of 4";
        }
      }
    EXPECT_EQ(int(seen.size()), c.TM * c.threads);
  }
  // Quarter-warp of 8 threads reading vector 0: 8 consecutive 16-byte vectors (no bank conflict).
  for (int t = 0; t < 8; ++t) EXPECT_EQ(microIndex(t, 0, 8, 16), 4 * t);
}

TEST(TileIndex, SplitRangesPartitionAndAreBalanced) {
  for (long long count : {1LL, 2LL, 7LL, 32LL, 513LL})
    for (long long parts = 1; parts <= std::min(count, 32LL); ++parts) {
      long long next = 0, smallest = count, largest = 0;
      for (long long p = 0; p < parts; ++p) {
        const IndexRange r = splitRange(count, parts, p);
        EXPECT_EQ(r.first, next);
        EXPECT_GT(r.last, r.first) << "no empty split when parts ≤ count";
        smallest = std::min(smallest, r.last - r.first);
        largest = std::max(largest, r.last - r.first);
        next = r.last;
      }
      EXPECT_EQ(next, count);
      EXPECT_LE(largest - smallest, 1);
    }
  EXPECT_EQ(roundUp(4099, 128), 4224);
  EXPECT_EQ(roundUp(128, 128), 128);
  EXPECT_EQ(ceilDiv(1, 64), 1);
}

TEST(TileIndex, DisplayBlocksOfOddSizes) {
  struct Case {
    long long n, cells;
  };
  for (Case c : {Case{4099, 1024}, Case{1000, 7}, Case{33, 5}, Case{7, 1024}, Case{1, 1}, Case{65536, 1024},
                 Case{1024, 1024}, Case{1025, 1024}, Case{3, 2}}) {
    SCOPED_TRACE(::testing::Message() << "n=" << c.n << " cells=" << c.cells);
    const long long blocks = displayBlocks(c.n, c.cells);
    EXPECT_EQ(blocks, std::min(c.n, c.cells));
    EXPECT_EQ(blockStart(0, c.n, blocks), 0);
    EXPECT_EQ(blockStart(blocks, c.n, blocks), c.n);
    const long long small = c.n / blocks;
    for (long long b = 0; b < blocks; ++b) {
      const long long size = blockStart(b + 1, c.n, blocks) - blockStart(b, c.n, blocks);
      EXPECT_TRUE(size == small || size == small + 1) << "block " << b << " has " << size;
    }
    for (long long i = 0; i < c.n; ++i) {
      const long long b = blockOf(i, c.n, blocks);
      ASSERT_GE(i, blockStart(b, c.n, blocks)) << "i=" << i;
      ASSERT_LT(i, blockStart(b + 1, c.n, blocks)) << "i=" << i;
    }
  }
  // 4099 → 1024: three blocks of 5, the rest of 4 (4099 = 1021·4 + 3·5).
  int fives = 0;
  for (long long b = 0; b < 1024; ++b) fives += blockStart(b + 1, 4099, 1024) - blockStart(b, 4099, 1024) == 5;
  EXPECT_EQ(fives, 3);
}

// ---------------------------------------------------------------------------------------------------------
// Element conversion

bool sameFloat(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b) && std::signbit(a) == std::signbit(b);
  return bitsFromFloat(a) == bitsFromFloat(b);
}

TEST(ElementConvert, EveryHalfAndBfloat16PatternWidensExactly) {
  for (uint32_t bits = 0; bits <= 0xffffu; ++bits) {
    const uint16_t h = uint16_t(bits);
    ASSERT_TRUE(sameFloat(halfBitsToFloat(h), halfToFloat(h))) << "f16 bits " << bits;
    ASSERT_TRUE(sameFloat(bf16BitsToFloat(h), bfloat16ToFloat(h))) << "bf16 bits " << bits;
  }
  const uint16_t one = floatToHalf(1.f), tiny = 1;  // smallest subnormal half, 2^-24
  EXPECT_EQ(halfBitsToFloat(one), 1.f);
  EXPECT_EQ(halfBitsToFloat(tiny), std::ldexp(1.f, -24));
  const float values[3] = {1.5f, -2.f, 0.25f};
  const uint16_t halves[3] = {floatToHalf(1.5f), floatToHalf(-2.f), floatToHalf(0.25f)};
  EXPECT_EQ(readElement(values, ElementType::F32, 1), -2.f);
  EXPECT_EQ(readElement(halves, ElementType::F16, 2), 0.25f);
  EXPECT_EQ(elementSize(ElementType::BF16), 2u);
}

TEST(ElementConvert, FiniteTestCatchesNaNAndInfinities) {
  EXPECT_TRUE(isFiniteF(0.f));
  EXPECT_TRUE(isFiniteF(-3.4e38f));
  EXPECT_TRUE(isFiniteF(std::numeric_limits<float>::denorm_min()));
  EXPECT_FALSE(isFiniteF(std::numeric_limits<float>::infinity()));
  EXPECT_FALSE(isFiniteF(kNegInf));
  EXPECT_FALSE(isFiniteF(std::nanf("")));
  EXPECT_FALSE(isFiniteF(halfBitsToFloat(0x7c00)));  // f16 +inf
}

// ---------------------------------------------------------------------------------------------------------
// TF32: rounding and the tensor-core tiles' layout (tf32_tile.h)

float fromBits(uint32_t u) {
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
}

TEST(Tf32, RoundsToNearestWithTiesAwayFromZero) {
  const float ulp = std::ldexp(1.f, -10);  // TF32 spacing in [1, 2)
  EXPECT_EQ(toTf32(1.f), 1.f);
  EXPECT_EQ(toTf32(1.f + ulp / 2), 1.f + ulp);                             // tie: away from zero
  EXPECT_EQ(toTf32(-(1.f + ulp / 2)), -(1.f + ulp));
  EXPECT_EQ(toTf32(1.f + 3 * ulp / 2), 1.f + 2 * ulp);                     // tie between 1+ulp and 1+2ulp
  EXPECT_EQ(toTf32(std::nextafter(1.f + ulp / 2, 0.f)), 1.f);              // just below the tie
  EXPECT_EQ(toTf32(std::nextafter(2.f, 0.f)), 2.f);                        // carries into the exponent
  EXPECT_EQ(toTf32(std::numeric_limits<float>::max()), std::numeric_limits<float>::infinity());
  EXPECT_EQ(toTf32(fromBits(0x7f7fe000u)), fromBits(0x7f7fe000u));          // largest TF32 value stays
  EXPECT_TRUE(std::signbit(toTf32(-0.f)));
  EXPECT_EQ(toTf32(kNegInf), kNegInf);
  EXPECT_TRUE(std::isnan(toTf32(std::nanf(""))));
  std::mt19937_64 rng(5);
  std::normal_distribution<float> normal(0.f, 100.f);
  for (int i = 0; i < 100000; ++i) {
    const float x = normal(rng), t = toTf32(x);
    ASSERT_TRUE(isTf32(t)) << x;
    ASSERT_EQ(toTf32(t), t) << x;  // idempotent
    ASSERT_LE(std::abs(double(t) - double(x)), std::ldexp(std::abs(double(x)), -11)) << x;  // relative 2^-11
  }
  EXPECT_FALSE(isTf32(1.f + std::ldexp(1.f, -23)));
}

// The PTX fragment tables of mma.m16n8k8 .tf32: every element of A, B and C/D is held by exactly one
// (lane, register).
TEST(Tf32, FragmentTablesCoverEachMatrixOnce) {
  using F = MmaM16N8K8;
  std::set<std::pair<int, int>> a, b, c;
  for (int lane = 0; lane < 32; ++lane) {
    for (int reg = 0; reg < 4; ++reg) a.insert({F::aRow(lane, reg), F::aCol(lane, reg)});
    for (int reg = 0; reg < 2; ++reg) b.insert({F::bRow(lane, reg), F::bCol(lane, reg)});
    for (int reg = 0; reg < 4; ++reg) c.insert({F::cRow(lane, reg), F::cCol(lane, reg)});
  }
  EXPECT_EQ(a.size(), 128u);
  EXPECT_EQ(b.size(), 64u);
  EXPECT_EQ(c.size(), 128u);
  EXPECT_EQ(*a.rbegin(), std::make_pair(15, 7));
  EXPECT_EQ(*b.rbegin(), std::make_pair(7, 7));
  EXPECT_EQ(*c.rbegin(), std::make_pair(15, 7));
}

// What the device code of Tf32WarpMma::step assumes, for every lane, fragment and register: the register it
// loads holds the table's element, register pairs are one aligned 8-byte load, and the accumulator slot it
// passes for a D register is where row()/col() say that element of the block is.
template <int MI, int NI>
void checkWarpMma(int lda, int ldb) {
  using M = Tf32WarpMma<MI, NI>;
  using F = MmaM16N8K8;
  for (int lane = 0; lane < 32; ++lane) {
    for (int mi = 0; mi < MI; ++mi) {
      for (int reg = 0; reg < 4; ++reg)
        ASSERT_EQ(M::aOffset(lane, mi, reg, lda), F::aCol(lane, reg) * lda + M::aSlot(mi, F::aRow(lane, reg)));
      ASSERT_EQ(M::aOffset(lane, mi, 0, lda) % 2, 0);
      ASSERT_EQ(M::aOffset(lane, mi, 2, lda) % 2, 0);
    }
    for (int ni = 0; ni < NI; ++ni) {
      for (int reg = 0; reg < 2; ++reg) {
        ASSERT_EQ(M::bOffset(lane, ni, reg, ldb), F::bRow(lane, reg) * ldb + M::bSlot(ni, F::bCol(lane, reg)));
      }
      if (ni % 2 == 0) {
        ASSERT_EQ(M::bOffset(lane, ni, 0, ldb) % 2, 0);
      }
    }
    for (int mi = 0; mi < MI; ++mi)
      for (int ni = 0; ni < NI; ++ni)
        for (int reg = 0; reg < 4; ++reg) {
          ASSERT_EQ(M::row(lane, M::dRow(mi, reg)), M::aSlot(mi, F::cRow(lane, reg))) << lane << " " << reg;
          ASSERT_EQ(M::col(lane, M::dCol(ni, reg)), M::bSlot(ni, F::cCol(lane, reg))) << lane << " " << reg;
        }
  }
  // Each slot of a lane is one block element, each block element one (lane, slot).
  std::set<std::pair<int, int>> seen;
  for (int lane = 0; lane < 32; ++lane)
    for (int r = 0; r < M::TM; ++r)
      for (int c = 0; c < M::TN; ++c) seen.insert({M::row(lane, r), M::col(lane, c)});
  EXPECT_EQ(seen.size(), size_t(32 * M::TM * M::TN));
  EXPECT_EQ(seen.rbegin()->first, 16 * MI - 1);
  EXPECT_EQ(seen.rbegin()->second, 8 * NI - 1);
}

TEST(Tf32, WarpMmaLoadsAndSlotsFollowTheFragmentTables) {
  checkWarpMma<4, 4>(136, 136);  // the 128 × 128 LSE tile's warps
  checkWarpMma<2, 2>(72, 72);    // the 64 × 64 tiles' warps and the P·V product
}

// With rows of ≡ 8 (mod 32) floats, each half-warp's 8-byte fragment loads touch all 32 banks once.
TEST(Tf32, FragmentLoadsAreFreeOfBankConflicts) {
  using M = Tf32WarpMma<4, 4>;
  for (int ld : {136, 72})
    for (int half = 0; half < 2; ++half)
      for (int reg : {0, 2}) {
        std::set<int> banks, banksB;
        for (int lane = 16 * half; lane < 16 * half + 16; ++lane) {
          const int a = M::aOffset(lane, 1, reg, ld), b = M::bOffset(lane, 2, reg / 2, ld);
          banks.insert(a % 32);
          banks.insert((a + 1) % 32);
          banksB.insert(b % 32);
          banksB.insert((b + 1) % 32);
        }
        EXPECT_EQ(banks.size(), 32u) << "A, ld " << ld;
        EXPECT_EQ(banksB.size(), 32u) << "B, ld " << ld;
      }
}

// The TF32 tiles offer the layout contract of every score tile (score_tile.h): a tid ↔ (tx, ty) grid, rows
// from ty only, columns from tx only, each tile element owned once, columns in aligned groups of 4; and the
// P·V product's output columns are 4·tx … 4·tx + 3.
template <class Tile>
void checkTileContract() {
  std::set<std::pair<int, int>> grid, elements;
  for (int tid = 0; tid < Tile::kThreads; ++tid) {
    grid.insert({Tile::tx(tid), Tile::ty(tid)});
    ASSERT_LT(Tile::tx(tid), Tile::kThreadsX);
    ASSERT_LT(Tile::ty(tid), Tile::kThreadsY);
    for (int other = 0; other < Tile::kThreads; ++other) {
      if (Tile::ty(other) == Tile::ty(tid)) {
        for (int r = 0; r < Tile::TM; ++r) ASSERT_EQ(Tile::row(other, r), Tile::row(tid, r));
      }
      if (Tile::tx(other) == Tile::tx(tid)) {
        for (int c = 0; c < Tile::TN; ++c) ASSERT_EQ(Tile::col(other, c), Tile::col(tid, c));
      }
    }
    for (int c = 0; c < Tile::TN; ++c) {
      if (c % 4 == 0) ASSERT_EQ(Tile::col(tid, c) % 4, 0);
      else ASSERT_EQ(Tile::col(tid, c), Tile::col(tid, c - 1) + 1);
    }
    for (int r = 0; r < Tile::TM; ++r)
      for (int c = 0; c < Tile::TN; ++c) elements.insert({Tile::row(tid, r), Tile::col(tid, c)});
  }
  EXPECT_EQ(grid.size(), size_t(Tile::kThreads));
  EXPECT_EQ(elements.size(), size_t(Tile::BM) * Tile::BN);
  EXPECT_EQ(elements.rbegin()->first, Tile::BM - 1);
}

TEST(Tf32, TilesKeepTheScoreTileLayoutContract) {
  checkTileContract<Tf32Kernels::Lse::Tile>();
  checkTileContract<Tf32Tile64>();
  checkTileContract<Fp32Kernels::Lse::Tile>();
  checkTileContract<Fp32Tile64>();
  using V = Tf32Kernels::Values;
  for (int tid = 0; tid < Tf32Tile64::kThreads; ++tid)
    for (int c = 0; c < V::TV; ++c) ASSERT_EQ(V::outCol(tid, c), Tf32Tile64::tx(tid) * V::TV + c);
  // The kernels keep their thread counts, so grids and launch bounds are the FP32 ones.
  EXPECT_EQ(Tf32Kernels::Lse::kThreads, Fp32Kernels::Lse::kThreads);
  EXPECT_EQ(Tf32Kernels::Apply::kThreads, Fp32Kernels::Apply::kThreads);
}

}  // namespace
}  // namespace tl::cuda
