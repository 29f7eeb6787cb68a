#pragma once
// How kernel bodies are written so that they run both on the GPU and, thread by thread, on the CPU.
//
// A kernel is a struct with a POD `Params`, a `Shared` (its shared memory), a thread count `kThreads` and
//   template <class Block> TL_HOST_DEVICE static void run(Block&, const Params&, BlockIndex, Shared&);
// The body is a sequence of phases separated by block.sync() (= __syncthreads()):
//   block.forEach([&](int tid) { ... });   // what thread `tid` does in this phase
//   block.sync();
// and per-thread registers live in `typename Block::template Local<Regs> regs(block)`, reached as regs[tid].
// On the device (cuda_launch.cuh) forEach calls the phase once with threadIdx.x and Local is one register
// struct; the CPU simulation (tests/core/cuda/sim_device.h) runs every thread of a phase in turn, forwards or
// backwards, so the kernels' index arithmetic, shared-memory layouts and bounds are tested on the CPU.
// Rules: never sync inside forEach, never leave a phase early for some threads in a way that skips a sync.
#include <cstdint>
#include <stdexcept>

#include "cuda/host_device.h"

namespace tl::cuda {

// 16-byte vector loads and stores of 4 floats. The device requires 16-byte alignment; the CPU version checks
// it, so a misaligned access fails in the CPU tests instead of faulting on the GPU.
TL_HOST_DEVICE TL_FORCE_INLINE void load4(const float* p, float* out) {
#if defined(__CUDA_ARCH__)
  const float4 v = *reinterpret_cast<const float4*>(p);
  out[0] = v.x;
  out[1] = v.y;
  out[2] = v.z;
  out[3] = v.w;
#else
  if (reinterpret_cast<std::uintptr_t>(p) % 16 != 0) throw std::logic_error("load4: address not 16-byte aligned");
  for (int i = 0; i < 4; ++i) out[i] = p[i];
#endif
}

TL_HOST_DEVICE TL_FORCE_INLINE void store4(float* p, const float* in) {
#if defined(__CUDA_ARCH__)
  *reinterpret_cast<float4*>(p) = make_float4(in[0], in[1], in[2], in[3]);
#else
  if (reinterpret_cast<std::uintptr_t>(p) % 16 != 0) throw std::logic_error("store4: address not 16-byte aligned");
  for (int i = 0; i < 4; ++i) p[i] = in[i];
#endif
}

// 8-byte store of 2 floats (8-byte aligned; checked on the CPU).
TL_HOST_DEVICE TL_FORCE_INLINE void store2(float* p, float x, float y) {
#if defined(__CUDA_ARCH__)
  *reinterpret_cast<float2*>(p) = make_float2(x, y);
#else
  if (reinterpret_cast<std::uintptr_t>(p) % 8 != 0) throw std::logic_error("store2: address not 8-byte aligned");
  p[0] = x;
  p[1] = y;
#endif
}

// A 16-byte copy from global to shared memory that completes asynchronously on the device (cp.async, sm_80+):
// the copying thread calls waitAsyncCopies() before the block.sync() that publishes the data to the others.
// KeepInL1: data the block reads again (a tile's row operand, the same for every key tile) is cached in L1
// (.ca); streamed data (key tiles, values) goes through L2 only (.cg) and leaves L1 to the former.
// The CPU version copies at once, with load4/store4's alignment checks.
template <bool KeepInL1>
TL_HOST_DEVICE TL_FORCE_INLINE void copyAsync16(float* sharedDst, const float* globalSrc) {
#if defined(__CUDA_ARCH__)
#if __CUDA_ARCH__ < 800
#error "copyAsync16 (cp.async) needs sm_80 or newer"
#endif
  const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(sharedDst));
  if (KeepInL1)
    asm volatile("cp.async.ca.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(globalSrc) : "memory");
  else
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(globalSrc) : "memory");
#else
  float v[4];
  load4(globalSrc, v);
  store4(sharedDst, v);
#endif
}

// Waits for every copyAsync16 this thread issued.
TL_HOST_DEVICE TL_FORCE_INLINE void waitAsyncCopies() {
#if defined(__CUDA_ARCH__)
  asm volatile("cp.async.wait_all;\n" ::: "memory");
#endif
}

TL_HOST_DEVICE TL_FORCE_INLINE float fmaF(float a, float b, float c) {
#if defined(__CUDA_ARCH__)
  return __fmaf_rn(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}

// a·b rounded once, never contracted into a neighbouring add: every kernel forms the scaled score
// x = (q·k)·(1/(√d·eps)) the same way, as the CPU reference rounds X before adding potentials.
TL_HOST_DEVICE TL_FORCE_INLINE float mulRn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}

// A grid launch: blocks along x, y, z (CUDA limits: y, z ≤ 65535).
struct Grid {
  long long x = 1, y = 1, z = 1;
};

}  // namespace tl::cuda
