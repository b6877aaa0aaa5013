// Shared by chute's batched image kernels; chute.gpu.kernels prepends this file to each
// kernel source before compiling it with NVRTC (CuPy RawModule). No CUDA headers are
// included, so the sources compile with any NVRTC that CuPy finds.
//
// OUT_KIND (set with -D by the loader) picks the output element type:
//   0 = uint8 (rounded, saturated), 1 = float16 (IEEE half bits), 2 = float32.

#ifndef OUT_KIND
#define OUT_KIND 2
#endif

// One row of the per-sample parameter table; the layout matches SAMPLE_DTYPE in
// chute/gpu/kernels.py (112 bytes, 8-byte aligned).
struct SampleDesc {
    unsigned long long in_ptr;   // HWC uint8 pixels; pixels are C bytes apart
    long long in_row_stride;     // bytes between rows (decoders may pad rows)
    int in_h, in_w, in_c;        // input shape
    int mirror;                  // flips: bit 1 horizontal, bit 2 vertical (resample.cu)
    float win_y, win_x, win_h, win_w;  // source window (resample) or anchor (crop)
    float mean[4];               // out = (pixel - mean) * inv_std, per channel
    float inv_std[4];
    float fill[4];               // written as is where a pixel has no source
    long long out_offset;        // first element of this sample in the output buffer
    int out_h, out_w;
};

#if OUT_KIND == 0
typedef unsigned char out_t;
__device__ __forceinline__ out_t to_out(float v) {
    return (out_t)__float2int_rn(fminf(fmaxf(v, 0.f), 255.f));
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

// Writes the out_c channel values of output pixel (oy, ox) of one sample.
__device__ __forceinline__ void store_pixel(out_t* __restrict__ out, const SampleDesc& s,
                                            int oy, int ox, int out_c, int layout_chw,
                                            const float* v) {
    if (layout_chw) {
        const long long plane = (long long)s.out_h * s.out_w;
        out_t* p = out + s.out_offset + (long long)oy * s.out_w + ox;
#pragma unroll
        for (int c = 0; c < 4; ++c)
            if (c < out_c) p[c * plane] = to_out(v[c]);
    } else {
        out_t* p = out + s.out_offset + ((long long)oy * s.out_w + ox) * out_c;
#pragma unroll
        for (int c = 0; c < 4; ++c)
            if (c < out_c) p[c] = to_out(v[c]);
    }
}
