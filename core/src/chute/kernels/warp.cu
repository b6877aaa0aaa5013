// Batched affine warps and windows (crop / pad) of ragged HWC images: one launch per batch.
//
// Each sample has a row of GeomSample (chute.gpu.geometry_kernels.GEOM_DTYPE): its input
// pointer and row stride, its output offset and size, and the parameters below. Inputs
// are in_t (IN_KIND), outputs out_t (OUT_KIND), all samples with C <= 4 channels.
// Grid: (x tiles, y tiles, samples); threads beyond a sample's output size return.

// One row of the per-sample table; the layout matches GEOM_DTYPE (120 bytes).
struct GeomSample {
    unsigned long long in_ptr;  // first pixel of the input
    long long in_row_stride;    // elements between input rows
    long long out_offset;       // first element of this sample in the output buffer
    int in_h, in_w;
    int out_h, out_w;
    int interp;                 // 0 nearest, 1 linear, 2 cubic (warps)
    int border;                 // BORDER_* code
    int win_y, win_x;           // window anchor (crop / pad)
    double m[6];                // output pixel (x, y) -> input point, pixel centres at integers
    float fill[4];              // value outside the input with a constant border
};

// acc[c] += w * input(y, x, c), the input extended by the sample's border.
__device__ __forceinline__ void add_tap(const GeomSample& s, int C, int y, int x, float w,
                                        float* acc) {
    const int by = border_index(y, s.in_h, s.border);
    const int bx = border_index(x, s.in_w, s.border);
    if (by < 0 || bx < 0) {
#pragma unroll
        for (int c = 0; c < 4; ++c)
            if (c < C) acc[c] += w * s.fill[c];
        return;
    }
    const in_t* p = (const in_t*)s.in_ptr + (long long)by * s.in_row_stride + (long long)bx * C;
#pragma unroll
    for (int c = 0; c < 4; ++c)
        if (c < C) acc[c] += w * (float)p[c];
}

// Keys' cubic convolution weights with a = -0.75 (OpenCV's INTER_CUBIC), taps at -1..2.
__device__ __forceinline__ void cubic_weights(float t, float* k) {
    const float a = -0.75f;
    const float u = t + 1.f, v = 1.f - t;
    k[0] = ((a * u - 5.f * a) * u + 8.f * a) * u - 4.f * a;
    k[1] = ((a + 2.f) * t - (a + 3.f)) * t * t + 1.f;
    k[2] = ((a + 2.f) * v - (a + 3.f)) * v * v + 1.f;
    k[3] = 1.f - k[0] - k[1] - k[2];
}

__device__ __forceinline__ double clamp_coord(double v) {
    // far-off points only need to land outside the image; keeps the int conversion defined
    return fmin(fmax(v, -1.0e9), 1.0e9);
}

// Output pixel (ox, oy) samples the input at m * (ox, oy, 1), in OpenCV's coordinates
// (pixel centres at integers): the point is computed in double, so nearest-neighbour
// picks floor(x + 0.5) as cv2.warpAffine does, and taps beyond the image follow the
// border mode one by one (a constant border blends the fill value in at the edges).
extern "C" __global__ void warp_affine_batch(const GeomSample* __restrict__ samples,
                                             out_t* __restrict__ out, int C) {
    const GeomSample& s = samples[blockIdx.z];
    const int ox = blockIdx.x * blockDim.x + threadIdx.x;
    const int oy = blockIdx.y * blockDim.y + threadIdx.y;
    if (ox >= s.out_w || oy >= s.out_h) return;

    const double sx = clamp_coord(s.m[0] * ox + s.m[1] * oy + s.m[2]);
    const double sy = clamp_coord(s.m[3] * ox + s.m[4] * oy + s.m[5]);
    float acc[4] = {0.f, 0.f, 0.f, 0.f};
    if (s.interp == 0) {
        add_tap(s, C, (int)floor(sy + 0.5), (int)floor(sx + 0.5), 1.f, acc);
    } else {
        const double fx0 = floor(sx), fy0 = floor(sy);
        const int x0 = (int)fx0, y0 = (int)fy0;
        const float tx = (float)(sx - fx0), ty = (float)(sy - fy0);
        if (s.interp == 1) {
            float row[4] = {0.f, 0.f, 0.f, 0.f};
            add_tap(s, C, y0, x0, 1.f - tx, row);
            add_tap(s, C, y0, x0 + 1, tx, row);
            float row2[4] = {0.f, 0.f, 0.f, 0.f};
            add_tap(s, C, y0 + 1, x0, 1.f - tx, row2);
            add_tap(s, C, y0 + 1, x0 + 1, tx, row2);
#pragma unroll
            for (int c = 0; c < 4; ++c) acc[c] = (1.f - ty) * row[c] + ty * row2[c];
        } else {
            float kx[4], ky[4];
            cubic_weights(tx, kx);
            cubic_weights(ty, ky);
            for (int j = 0; j < 4; ++j) {
                float row[4] = {0.f, 0.f, 0.f, 0.f};
                for (int i = 0; i < 4; ++i) add_tap(s, C, y0 - 1 + j, x0 - 1 + i, kx[i], row);
#pragma unroll
                for (int c = 0; c < 4; ++c) acc[c] += ky[j] * row[c];
            }
        }
    }
    out_t* o = out + s.out_offset + ((long long)oy * s.out_w + ox) * C;
#pragma unroll
    for (int c = 0; c < 4; ++c)
        if (c < C) o[c] = to_out(acc[c]);
}

// Output pixel (ox, oy) copies input pixel (win_y + oy, win_x + ox), the input extended
// by the border mode (crop windows leaving the image, padding): no resampling.
extern "C" __global__ void window_batch(const GeomSample* __restrict__ samples,
                                        out_t* __restrict__ out, int C) {
    const GeomSample& s = samples[blockIdx.z];
    const int ox = blockIdx.x * blockDim.x + threadIdx.x;
    const int oy = blockIdx.y * blockDim.y + threadIdx.y;
    if (ox >= s.out_w || oy >= s.out_h) return;

    const int by = border_index(s.win_y + oy, s.in_h, s.border);
    const int bx = border_index(s.win_x + ox, s.in_w, s.border);
    out_t* o = out + s.out_offset + ((long long)oy * s.out_w + ox) * C;
    if (by < 0 || bx < 0) {
#pragma unroll
        for (int c = 0; c < 4; ++c)
            if (c < C) o[c] = to_out(s.fill[c]);
        return;
    }
    const in_t* p = (const in_t*)s.in_ptr + (long long)by * s.in_row_stride + (long long)bx * C;
#pragma unroll
    for (int c = 0; c < 4; ++c)
        if (c < C) o[c] = to_out((float)p[c]);
}
