// Batched per-pixel color kernels: one launch per batch over a table of samples.
//
// chute.gpu.color_kernels compiles this file with NVRTC (no CUDA headers) once per
// (IN_KIND, OUT_KIND, COMPUTE_DOUBLE):
//   IN_KIND / OUT_KIND: 0 uint8, 1 int8, 2 uint16, 3 int16, 4 int32, 5 uint32,
//                       6 float16 (IEEE bits), 7 float32, 8 float64
//   COMPUTE_DOUBLE: 1 computes in double (uint8 inputs, whose CPU backends use exact
//                   float64 lookup tables, and float64 inputs), 0 in float.
// Every sample is a flat run of elements (HWC pixels are C consecutive elements), read
// from in_ptr and written at out_ptr; grid (x blocks striding over a sample, samples).
// Integer outputs round (half away from zero, or half to even where the CPU backend
// does: OpenCV's saturate_cast and fn.cast) and saturate.

#ifndef IN_KIND
#define IN_KIND 0
#endif
#ifndef OUT_KIND
#define OUT_KIND 7
#endif
#ifndef COMPUTE_DOUBLE
#define COMPUTE_DOUBLE 0
#endif

// One row of the sample table; matches FLAT_DTYPE in chute/gpu/color_kernels.py.
struct FlatDesc {
    unsigned long long in_ptr;
    unsigned long long out_ptr;
    long long count;  // elements (affine) or pixels (matrix, color space)
};

#if COMPUTE_DOUBLE
typedef double real;
__device__ __forceinline__ real mul_rn(real a, real b) { return __dmul_rn(a, b); }
__device__ __forceinline__ real add_rn(real a, real b) { return __dadd_rn(a, b); }
#else
typedef float real;
__device__ __forceinline__ real mul_rn(real a, real b) { return __fmul_rn(a, b); }
__device__ __forceinline__ real add_rn(real a, real b) { return __fadd_rn(a, b); }
#endif

#if IN_KIND == 0
typedef unsigned char in_t;
#elif IN_KIND == 1
typedef signed char in_t;
#elif IN_KIND == 2
typedef unsigned short in_t;
#elif IN_KIND == 3
typedef short in_t;
#elif IN_KIND == 4
typedef int in_t;
#elif IN_KIND == 5
typedef unsigned int in_t;
#elif IN_KIND == 6
typedef unsigned short in_t;
#elif IN_KIND == 7
typedef float in_t;
#else
typedef double in_t;
#endif

#if OUT_KIND == 0
typedef unsigned char out_t;
#define OUT_LO 0.0
#define OUT_HI 255.0
#elif OUT_KIND == 1
typedef signed char out_t;
#define OUT_LO -128.0
#define OUT_HI 127.0
#elif OUT_KIND == 2
typedef unsigned short out_t;
#define OUT_LO 0.0
#define OUT_HI 65535.0
#elif OUT_KIND == 3
typedef short out_t;
#define OUT_LO -32768.0
#define OUT_HI 32767.0
#elif OUT_KIND == 4
typedef int out_t;
#define OUT_LO -2147483648.0
#define OUT_HI 2147483647.0
#elif OUT_KIND == 5
typedef unsigned int out_t;
#define OUT_LO 0.0
#define OUT_HI 4294967295.0
#elif OUT_KIND == 6
typedef unsigned short out_t;
#elif OUT_KIND == 7
typedef float out_t;
#else
typedef double out_t;
#endif

#define OUT_IS_INT (OUT_KIND <= 5)

__device__ __forceinline__ real load(const in_t* __restrict__ p, long long i) {
#if IN_KIND == 6
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(p[i]));
    return (real)f;
#else
    return (real)p[i];
#endif
}

__device__ __forceinline__ void store(out_t* __restrict__ p, long long i, real v,
                                      int round_even) {
#if OUT_IS_INT
    double d = (double)v;
    d = round_even ? rint(d) : round(d);
    p[i] = (out_t)fmin(fmax(d, OUT_LO), OUT_HI);
#elif OUT_KIND == 6
    unsigned short h;
#if COMPUTE_DOUBLE
    asm("cvt.rn.f16.f64 %0, %1;" : "=h"(h) : "d"(v));
#else
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(v));
#endif
    p[i] = h;
#else
    p[i] = (out_t)v;
#endif
}

// out = in * gain[c] + offset[c] for every element, c = element index % C.
template <int C>
__device__ __forceinline__ void affine_run(const FlatDesc& s, const double* __restrict__ p,
                                           int round_even) {
    real gain[C], offset[C];
#pragma unroll
    for (int c = 0; c < C; ++c) {
        gain[c] = (real)p[c];
        offset[c] = (real)p[4 + c];
    }
    const in_t* in = (const in_t*)s.in_ptr;
    out_t* out = (out_t*)s.out_ptr;
    const long long step = (long long)gridDim.x * blockDim.x;
    for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < s.count; e += step) {
        const int c = C == 1 ? 0 : (int)(e % C);
        store(out, e, add_rn(mul_rn(load(in, e), gain[c]), offset[c]), round_even);
    }
}

// params: 8 doubles per sample (gain[4], offset[4]); channels 1..4.
extern "C" __global__ void affine_batch(const FlatDesc* __restrict__ samples,
                                        const double* __restrict__ params, int channels,
                                        int round_even) {
    const FlatDesc s = samples[blockIdx.y];
    const double* p = params + 8 * (long long)blockIdx.y;
    switch (channels) {
        case 2: affine_run<2>(s, p, round_even); break;
        case 3: affine_run<3>(s, p, round_even); break;
        case 4: affine_run<4>(s, p, round_even); break;
        default: affine_run<1>(s, p, round_even); break;
    }
}

// out[0..2] = M @ in[0..2] + offset per pixel; a 4th (alpha) channel passes through.
// params: 12 doubles per sample (M row-major, then offset); channels 3 or 4.
extern "C" __global__ void matrix_batch(const FlatDesc* __restrict__ samples,
                                        const double* __restrict__ params, int channels) {
    const FlatDesc s = samples[blockIdx.y];
    const double* p = params + 12 * (long long)blockIdx.y;
    real m[12];
#pragma unroll
    for (int k = 0; k < 12; ++k) m[k] = (real)p[k];
    const in_t* in = (const in_t*)s.in_ptr;
    out_t* out = (out_t*)s.out_ptr;
    const long long step = (long long)gridDim.x * blockDim.x;
    for (long long px = (long long)blockIdx.x * blockDim.x + threadIdx.x; px < s.count;
         px += step) {
        const long long e = px * channels;
        const real x0 = load(in, e), x1 = load(in, e + 1), x2 = load(in, e + 2);
#pragma unroll
        for (int r = 0; r < 3; ++r)
            store(out, e + r, m[3 * r] * x0 + m[3 * r + 1] * x1 + m[3 * r + 2] * x2 + m[9 + r], 0);
        if (channels == 4) store(out, e + 3, load(in, e + 3), 0);
    }
}

// ---- color space conversion ---------------------------------------------------------
// OpenCV's HSV: uint8 H in [0, 180) (degrees / 2), S and V in [0, 255], computed with
// OpenCV's fixed-point tables (bit-exact); floats: H in [0, 360), S and V in [0, 1].

__device__ __forceinline__ void rgb_to_hsv_u8(int r, int g, int b, float* hsv) {
    const int shift = 12;
    const int v = max(max(r, g), b);
    const int vmin = min(min(r, g), b);
    const int diff = v - vmin;
    const int sdiv = v ? __double2int_rn((double)(255 << shift) / (double)v) : 0;
    const int hdiv = diff ? __double2int_rn((double)(180 << shift) / (6.0 * diff)) : 0;
    const int s = (diff * sdiv + (1 << (shift - 1))) >> shift;
    int h;
    if (v == r) h = g - b;
    else if (v == g) h = b - r + 2 * diff;
    else h = r - g + 4 * diff;
    h = (h * hdiv + (1 << (shift - 1))) >> shift;
    if (h < 0) h += 180;
    hsv[0] = (float)h;
    hsv[1] = (float)s;
    hsv[2] = (float)v;
}

__device__ __forceinline__ void rgb_to_hsv_f(float r, float g, float b, float* hsv) {
    const float eps = 1.1920929e-07f;  // FLT_EPSILON
    float v = r, vmin = r;
    v = fmaxf(fmaxf(v, g), b);
    vmin = fminf(fminf(vmin, g), b);
    float diff = v - vmin;
    const float s = diff / (fabsf(v) + eps);
    diff = (float)(60.0 / (double)(diff + eps));
    float h;
    if (v == r) h = (g - b) * diff;
    else if (v == g) h = (b - r) * diff + 120.f;
    else h = (r - g) * diff + 240.f;
    if (h < 0.f) h += 360.f;
    hsv[0] = h;
    hsv[1] = s;
    hsv[2] = v;
}

// h in sectors of 60 degrees (scaled by hscale), s and v in [0, 1]; rgb in [0, 1].
__device__ __forceinline__ void hsv_to_rgb(float h, float s, float v, float hscale, float* rgb) {
    if (s == 0.f) {
        rgb[0] = rgb[1] = rgb[2] = v;
        return;
    }
    h = fmodf(h * hscale, 6.f);
    if (h < 0.f) h += 6.f;
    int sector = (int)floorf(h);
    h -= (float)sector;
    if ((unsigned)sector >= 6u) {
        sector = 0;
        h = 0.f;
    }
    const float tab[4] = {v, v * (1.f - s), v * (1.f - s * h), v * (1.f - s + s * h)};
    // (r, g, b) picks per sector, as OpenCV's sector table
    const int pick[6][3] = {{0, 3, 1}, {2, 0, 1}, {1, 0, 3}, {1, 2, 0}, {3, 1, 0}, {0, 1, 2}};
    rgb[0] = tab[pick[sector][0]];
    rgb[1] = tab[pick[sector][1]];
    rgb[2] = tab[pick[sector][2]];
}

// Quantizes an intermediate RGB value as the CPU backend's uint8 round trip does.
__device__ __forceinline__ float quantize_u8(float v) {
    return fminf(fmaxf(rintf(v), 0.f), 255.f);
}

// params (batch-wide, 24 doubles): A = 3x3 matrix + 3 offsets taking the input to RGB
// (or, without HSV, straight to the output), B = the same from RGB to the output.
// src_hsv / dst_hsv pick the HSV stages instead of A / B; hsv_u8 selects uint8 HSV
// (H in [0, 180), integer arithmetic) over float HSV.
extern "C" __global__ void color_space_batch(const FlatDesc* __restrict__ samples,
                                             const double* __restrict__ params, int in_c,
                                             int out_c, int src_hsv, int dst_hsv, int hsv_u8,
                                             int round_even) {
    const FlatDesc s = samples[blockIdx.y];
    real a[12], b[12];
#pragma unroll
    for (int k = 0; k < 12; ++k) {
        a[k] = (real)params[k];
        b[k] = (real)params[12 + k];
    }
    const in_t* in = (const in_t*)s.in_ptr;
    out_t* out = (out_t*)s.out_ptr;
    const long long step = (long long)gridDim.x * blockDim.x;
    for (long long px = (long long)blockIdx.x * blockDim.x + threadIdx.x; px < s.count;
         px += step) {
        real x[3];
        x[0] = load(in, px * in_c);
        x[1] = in_c == 3 ? load(in, px * in_c + 1) : x[0];
        x[2] = in_c == 3 ? load(in, px * in_c + 2) : x[0];
        real rgb[3];
        if (src_hsv) {
            float f[3];
            if (hsv_u8) {
                hsv_to_rgb((float)x[0], (float)x[1] * (1.f / 255.f), (float)x[2] * (1.f / 255.f),
                           6.f / 180.f, f);
#pragma unroll
                for (int k = 0; k < 3; ++k) f[k] = quantize_u8(f[k] * 255.f);
            } else {
                hsv_to_rgb((float)x[0], (float)x[1], (float)x[2], 6.f / 360.f, f);
            }
#pragma unroll
            for (int k = 0; k < 3; ++k) rgb[k] = (real)f[k];
        } else {
#pragma unroll
            for (int r = 0; r < 3; ++r)
                rgb[r] = a[3 * r] * x[0] + a[3 * r + 1] * x[1] + a[3 * r + 2] * x[2] + a[9 + r];
        }
        real y[3];
        if (dst_hsv) {
            float f[3];
            if (hsv_u8) {
                // the CPU backend converts to uint8 RGB first, then to HSV
                rgb_to_hsv_u8((int)quantize_u8((float)rgb[0]), (int)quantize_u8((float)rgb[1]),
                              (int)quantize_u8((float)rgb[2]), f);
            } else {
                rgb_to_hsv_f((float)rgb[0], (float)rgb[1], (float)rgb[2], f);
            }
#pragma unroll
            for (int k = 0; k < 3; ++k) y[k] = (real)f[k];
        } else {
#pragma unroll
            for (int r = 0; r < 3; ++r)
                y[r] = b[3 * r] * rgb[0] + b[3 * r + 1] * rgb[1] + b[3 * r + 2] * rgb[2] + b[9 + r];
        }
        for (int k = 0; k < out_c; ++k) store(out, px * out_c + k, y[k], round_even);
    }
}
