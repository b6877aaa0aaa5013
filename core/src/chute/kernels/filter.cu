// Batched separable Gaussian blur of ragged HWC images: two launches per batch, rows
// (input -> float32 scratch) then columns (scratch -> output).
//
// Each sample (or frame) has a row of BlurSample (chute.gpu.geometry_kernels.BLUR_DTYPE);
// its kernel taps, normalised to sum 1, lie in one float32 array at taps_y / taps_x
// (2 * rad + 1 each). Pixels beyond the image follow the border mode per axis; a
// constant border reads fill. The scratch and the output share the element offsets.
// Grid: (x tiles, y tiles, samples).

// One row of the per-sample table; the layout matches BLUR_DTYPE (56 bytes).
struct BlurSample {
    unsigned long long in_ptr;  // first pixel of the input
    long long in_row_stride;    // elements between input rows
    long long offset;           // first element of this sample in the scratch and output
    int h, w;
    int rad_y, rad_x;           // kernel radii (0 = the axis is copied)
    int taps_y, taps_x;         // first weight of each axis's kernel
    int border;                 // BORDER_* code
    float fill;                 // value outside the image with a constant border
};

extern "C" __global__ void blur_rows(const BlurSample* __restrict__ samples,
                                     const float* __restrict__ weights,
                                     float* __restrict__ scratch, int C) {
    const BlurSample& s = samples[blockIdx.z];
    const int x = blockIdx.x * blockDim.x + threadIdx.x;
    const int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= s.w || y >= s.h) return;

    const in_t* row = (const in_t*)s.in_ptr + (long long)y * s.in_row_stride;
    const float* k = weights + s.taps_x + s.rad_x;
    float acc[4] = {0.f, 0.f, 0.f, 0.f};
    for (int t = -s.rad_x; t <= s.rad_x; ++t) {
        const float wt = k[t];
        const int bx = border_index(x + t, s.w, s.border);
        if (bx < 0) {
#pragma unroll
            for (int c = 0; c < 4; ++c) acc[c] += wt * s.fill;
            continue;
        }
        const in_t* p = row + (long long)bx * C;
#pragma unroll
        for (int c = 0; c < 4; ++c)
            if (c < C) acc[c] += wt * (float)p[c];
    }
    float* o = scratch + s.offset + ((long long)y * s.w + x) * C;
#pragma unroll
    for (int c = 0; c < 4; ++c)
        if (c < C) o[c] = acc[c];
}

extern "C" __global__ void blur_cols(const BlurSample* __restrict__ samples,
                                     const float* __restrict__ weights,
                                     const float* __restrict__ scratch, out_t* __restrict__ out,
                                     int C) {
    const BlurSample& s = samples[blockIdx.z];
    const int x = blockIdx.x * blockDim.x + threadIdx.x;
    const int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= s.w || y >= s.h) return;

    const float* k = weights + s.taps_y + s.rad_y;
    const float* base = scratch + s.offset + (long long)x * C;
    const long long row_stride = (long long)s.w * C;
    float acc[4] = {0.f, 0.f, 0.f, 0.f};
    for (int t = -s.rad_y; t <= s.rad_y; ++t) {
        const float wt = k[t];
        const int by = border_index(y + t, s.h, s.border);
        if (by < 0) {
            // a row beyond the image is all fill, and the row kernel sums to 1
#pragma unroll
            for (int c = 0; c < 4; ++c) acc[c] += wt * s.fill;
            continue;
        }
        const float* p = base + by * row_stride;
#pragma unroll
        for (int c = 0; c < 4; ++c)
            if (c < C) acc[c] += wt * p[c];
    }
    out_t* o = out + s.offset + ((long long)y * s.w + x) * C;
#pragma unroll
    for (int c = 0; c < 4; ++c)
        if (c < C) o[c] = to_out(acc[c]);
}
