// Common definitions for the chess core: compiled by NVRTC (through CuPy), by nvcc, and by the host
// C++ compiler (the CPU extension). No standard-library headers here: NVRTC does not see them.
#pragma once

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define PC_HD __host__ __device__ __forceinline__
#define PC_HDN __host__ __device__
#define PC_HD_NOINLINE __host__ __device__ __noinline__
#else
#define PC_HD inline __attribute__((always_inline))
#define PC_HDN inline
#define PC_HD_NOINLINE inline
#endif

// CPU-only choices in the shared chess core (the GPU kernels' code stays as it is):
// PC_HOST_CODE is 1 in host builds, 0 in GPU builds (a condition `PC_HOST_CODE && ...` is a host-only
// branch); PC_HOST_UNROLL(n) before a loop makes GCC unroll it n times in host builds (GCC keeps a short
// loop over a local array rolled, and the array then lives in memory), and is nothing in GPU builds.
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define PC_HOST_UNROLL(n)
#define PC_HOST_CODE 0
#else
#define PC_HOST_CODE 1
#define PC_HOST_PRAGMA(x) _Pragma(#x)
#define PC_HOST_UNROLL(n) PC_HOST_PRAGMA(GCC unroll n)
#endif

typedef unsigned long long u64;
typedef long long i64;
typedef unsigned int u32;
typedef unsigned short u16;
typedef unsigned char u8;

enum { WHITE = 0, BLACK = 1 };
// Piece codes as stored in the quad bitboard: bit0 -> pbq, bit1 -> nbk, bit2 -> rqk.
enum { PAWN = 1, KNIGHT = 2, BISHOP = 3, ROOK = 4, QUEEN = 5, KING = 6 };

PC_HD u64 bit(int sq) { return 1ULL << sq; }

PC_HD int popcnt(u64 x) {
#ifdef __CUDA_ARCH__
    return __popcll(x);
#else
    return __builtin_popcountll(x);
#endif
}

// Index of the least significant set bit; x must be non-zero.
PC_HD int lsb(u64 x) {
#ifdef __CUDA_ARCH__
    // Hopper has no 64-bit bit scan: one 32-bit scan of the half that holds the bit (6 instructions
    // against 11 for __ffsll).
    const u32 lo = (u32)x, hi = (u32)(x >> 32);
    return lo ? __ffs(lo) - 1 : __ffs(hi) + 31;
#else
    return __builtin_ctzll(x);
#endif
}

PC_HD int pop_lsb(u64& x) {
    int s = lsb(x);
    x &= x - 1;
    return s;
}

PC_HD bool more_than_one(u64 x) { return (x & (x - 1)) != 0; }

#define PC_FILE_A 0x0101010101010101ULL
#define PC_FILE_H 0x8080808080808080ULL
#define PC_RANK_1 0x00000000000000FFULL
#define PC_RANK_3 0x0000000000FF0000ULL
#define PC_RANK_6 0x0000FF0000000000ULL
#define PC_RANK_8 0xFF00000000000000ULL
