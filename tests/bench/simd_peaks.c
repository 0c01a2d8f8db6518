// Throughput of the AVX-512 instructions our panel kernels are built from, one core, in
// instructions a second: the ceilings docs/benchmarks.md compares the kernels against (a
// kernel's GMAC/s from `pagedchat-cli bench quant` over vpdpbusd's 64, vfmadd231ps's 16 or
// vdpbf16ps's 32 multiply-adds an instruction at these rates). Not part of the build: it needs
// a CPU with AVX-512 VNNI and BF16.
//   gcc -O2 -march=native tests/bench/simd_peaks.c -o /tmp/simd_peaks && /tmp/simd_peaks
// Twelve independent accumulators an iteration, so that latency never limits.
#include <stdio.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

static const long kIterations = 200000000;
static int quads[16];

#define TWELVE(OP, SRC)                                                                                     \
  OP " " SRC ",%%zmm13,%%zmm0\n" OP " " SRC ",%%zmm13,%%zmm1\n" OP " " SRC ",%%zmm13,%%zmm2\n" OP " " SRC  \
     ",%%zmm13,%%zmm3\n" OP " " SRC ",%%zmm13,%%zmm4\n" OP " " SRC ",%%zmm13,%%zmm5\n" OP " " SRC           \
     ",%%zmm13,%%zmm6\n" OP " " SRC ",%%zmm13,%%zmm7\n" OP " " SRC ",%%zmm13,%%zmm8\n" OP " " SRC           \
     ",%%zmm13,%%zmm9\n" OP " " SRC ",%%zmm13,%%zmm10\n" OP " " SRC ",%%zmm13,%%zmm11\n"
#define CLOBBERS "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11"

#define MEASURE(NAME, ASM)                                                     \
  do {                                                                         \
    const double t0 = now();                                                   \
    for (long k = 0; k < kIterations; ++k) __asm__ volatile(ASM ::"r"(quads) : CLOBBERS); \
    printf("%-34s %5.2f G/s\n", NAME, kIterations * 12 / (now() - t0) / 1e9); \
  } while (0)

int main(void) {
  __asm__ volatile("vpxord %%zmm12,%%zmm12,%%zmm12\n vpxord %%zmm13,%%zmm13,%%zmm13" ::: "xmm12", "xmm13");
  MEASURE("vpdpbusd zmm", TWELVE("vpdpbusd", "%%zmm12"));
  MEASURE("vpdpbusd zmm, broadcast from memory", TWELVE("vpdpbusd", "(%0)%{1to16%}"));
  MEASURE("vpmulld zmm", TWELVE("vpmulld", "%%zmm12"));
  MEASURE("vfmadd231ps zmm", TWELVE("vfmadd231ps", "%%zmm12"));
  MEASURE("vdpbf16ps zmm", TWELVE("vdpbf16ps", "%%zmm12"));
  return 0;
}
