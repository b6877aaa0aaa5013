// Shared by the geometry kernels (warp.cu, filter.cu); chute.gpu.geometry_kernels prepends
// this file to each of them before compiling with NVRTC (CuPy RawModule). No CUDA headers.
//
// IN_KIND and OUT_KIND (set with -D by the loader) pick the element types:
//   0 = uint8, 1 = float16 (IEEE half bits; outputs only), 2 = float32.
// Integer outputs are rounded and saturated: halves to even (OpenCV's cvRound, NumPy's
// rint), or away from zero with -DROUND_AWAY=1 (chute's convert_saturate).

#ifndef IN_KIND
#define IN_KIND 0
#endif
#ifndef OUT_KIND
#define OUT_KIND 0
#endif
#ifndef ROUND_AWAY
#define ROUND_AWAY 0
#endif

#if IN_KIND == 0
typedef unsigned char in_t;
#else
typedef float in_t;
#endif

#if OUT_KIND == 0
typedef unsigned char out_t;
__device__ __forceinline__ out_t to_out(float v) {
    v = fminf(fmaxf(v, 0.f), 255.f);
#if ROUND_AWAY
    return (out_t)(int)(v + 0.5f);  // v >= 0 here, so this rounds halves up (away from 0)
#else
    return (out_t)__float2int_rn(v);
#endif
}
#elif OUT_KIND == 1
typedef unsigned short out_t;
__device__ __forceinline__ out_t to_out(float v) {
    unsigned short h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(v));
    return h;
}
#else
typedef float out_t;
__device__ __forceinline__ out_t to_out(float v) { return v; }
#endif

// Border codes (chute.gpu.geometry_kernels.BORDER_CODES).
#define BORDER_CONSTANT 0
#define BORDER_REPLICATE 1
#define BORDER_REFLECT 2
#define BORDER_REFLECT_101 3
#define BORDER_WRAP 4

// Maps index i onto [0, n) as OpenCV's border modes do (the same periodic rules as
// chute.ops.geometry.crop_kernels.border_index); -1 = outside with a constant border.
__device__ __forceinline__ int border_index(int i, int n, int border) {
    if ((unsigned)i < (unsigned)n) return i;
    if (border == BORDER_CONSTANT) return -1;
    if (border == BORDER_REPLICATE) return i < 0 ? 0 : n - 1;
    if (border == BORDER_WRAP) {
        int r = i % n;
        return r < 0 ? r + n : r;
    }
    if (border == BORDER_REFLECT) {  // fedcba|abcdef
        const int period = 2 * n;
        int r = i % period;
        if (r < 0) r += period;
        return r < n ? r : period - 1 - r;
    }
    // reflect_101: gfedcb|abcdef
    if (n == 1) return 0;
    const int period = 2 * n - 2;
    int r = i % period;
    if (r < 0) r += period;
    return r < n ? r : period - r;
}
