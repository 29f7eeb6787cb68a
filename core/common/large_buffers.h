#pragma once
// Dense n × n buffers: backed by transparent huge pages, and kept in the process for reuse once freed
// (docs/architecture.md#large-buffers-and-huge-pages).
// A fresh buffer costs one page fault per 4 KiB page on first touch (the kernel zeroes and accounts each page); at
// n = 4096 those faults were 20-30 % of a dense operator's time on the development VM. Asking for 2 MiB pages on
// the buffer before it is touched takes 512 times fewer faults. This needs the kernel's transparent huge pages
// in mode "always" or "madvise" (/sys/kernel/mm/transparent_hugepage/enabled); with "never" the advice is ignored
// and everything works as before.
#include <cstddef>
#include <string>

#include "common/matrix.h"

namespace tl {

// Advises huge pages for the 2 MiB-aligned pages inside [data, data + bytes) -- for buffers of at least
// kHugePageAdviceBytes; smaller ones are left alone. Best effort: a kernel without THP ignores it.
inline constexpr std::size_t kHugePageAdviceBytes = std::size_t(4) << 20;
void adviseHugePages(void* data, std::size_t bytes);

// An uninitialised rows × cols matrix whose first touch faults in huge pages: the allocation of every dense
// n_q × n_k buffer of the operators (scores, plans).
template <class T>
Mat<T> largeMatrix(Eigen::Index rows, Eigen::Index cols) {
  Mat<T> m(rows, cols);
  adviseHugePages(m.data(), std::size_t(m.size()) * sizeof(T));
  return m;
}

// Process policy, set once at start by the programs (tlens, transportlens), before any thread: memory of freed
// blocks stays in the process for the next allocation instead of going back to the kernel. glibc returns every
// block of 32 MiB and more to the kernel when it is freed, so each new n × n buffer (one per operator call, each
// slider move) was faulted in and zeroed by the kernel again: 20 % of a dense softmax at n = 4096. Kept, the next
// buffer of that size reuses the same pages. The cost is resident memory: it stays at its high-water mark until
// releaseKeptBuffers(). No effect outside glibc or under a sanitizer's allocator.
//
// `threads` says which threads allocate the large buffers. glibc keeps them for the main thread's heap only: another
// thread's arena maps every block above its 64 MiB heaps on its own and unmaps it when freed. So for Any (the
// desktop app computes on a worker thread) every thread allocates from the main heap, which slows allocation inside
// parallel loops a little (dense ESP at n = 1024 on two threads: 3.9 → 4.9 ms); tlens computes on its main thread
// and asks for Main.
enum class LargeBufferThreads { Main, Any };
void keepFreedBuffers(LargeBufferThreads threads);
// The same settings as glibc tunables for another process ("glibc.malloc.…:…"), as keepFreedBuffers(Main) makes
// them: what `tlens bench` gives its PyTorch reference.
std::string keptBuffersTunables();
// Hands the free memory kept by keepFreedBuffers back to the kernel (the desktop app does when the tokens change:
// buffers of the old size would not be reused).
void releaseKeptBuffers();

// The kernel's transparent-huge-page mode ("always", "madvise", "never"), or "unavailable" (for reports).
std::string transparentHugePageMode();

}  // namespace tl
