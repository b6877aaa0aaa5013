// Batched resampling of ragged HWC uint8 images: one launch per batch.
//
// Each output pixel (oy, ox) of sample n samples the source window
// (win_y, win_x, win_h, win_w) of input n at the point
//     cy = win_y + (oy' + 0.5) * win_h / out_h,  cx = win_x + (ox' + 0.5) * win_w / out_w
// (ox' = out_w - 1 - ox when mirrored, oy' likewise for vertical flips), with Pillow's resampling filters: nearest,
// triangle (linear) or Keys cubic (a = -0.5). When antialias is set and the window is
// shrunk (scale > 1), the filter is stretched by the scale, so every source pixel under
// the output pixel's footprint contributes (as Pillow and DALI do); a tap that falls
// outside the image reads the edge pixel with its full weight (DALI clamps the source
// index, as the CPU backend does). Output pixels whose sample point lies outside the
// image get the fill value. Grid: (x tiles, y tiles, samples).

__device__ __forceinline__ float filter_weight(int interp, float x) {
    x = fabsf(x);
    if (interp == 1) return fmaxf(0.f, 1.f - x);
    const float a = -0.5f;
    if (x < 1.f) return ((a + 2.f) * x - (a + 3.f)) * x * x + 1.f;
    if (x < 2.f) return (((x - 5.f) * x + 8.f) * x - 4.f) * a;
    return 0.f;
}

// Filtered sum over the taps [y0, y1) x [x0, x1); C is the input channel count.
template <int C>
__device__ __forceinline__ void filter_taps(const SampleDesc& s, int interp, float cy, float cx,
                                            float inv_fy, float inv_fx, int y0, int y1, int x0,
                                            int x1, float* acc) {
    const unsigned char* base = (const unsigned char*)s.in_ptr;
    for (int y = y0; y < y1; ++y) {
        const float wy = filter_weight(interp, (y + 0.5f - cy) * inv_fy);
        if (wy == 0.f) continue;
        const int sy = min(max(y, 0), s.in_h - 1);  // taps past the edge read the edge
        const unsigned char* row_ptr = base + (long long)sy * s.in_row_stride;
        float row[C];
#pragma unroll
        for (int c = 0; c < C; ++c) row[c] = 0.f;
        for (int x = x0; x < x1; ++x) {
            const float wx = filter_weight(interp, (x + 0.5f - cx) * inv_fx);
            const unsigned char* p = row_ptr + min(max(x, 0), s.in_w - 1) * C;
#pragma unroll
            for (int c = 0; c < C; ++c) row[c] += wx * (float)p[c];
        }
#pragma unroll
        for (int c = 0; c < C; ++c) acc[c] += wy * row[c];
    }
}

extern "C" __global__ void resample_batch(const SampleDesc* __restrict__ samples,
                                          out_t* __restrict__ out, int out_c, int layout_chw,
                                          int interp, int antialias) {
    const SampleDesc& s = samples[blockIdx.z];
    const int ox = blockIdx.x * blockDim.x + threadIdx.x;
    const int oy = blockIdx.y * blockDim.y + threadIdx.y;
    if (ox >= s.out_w || oy >= s.out_h) return;

    const float scale_y = s.win_h / (float)s.out_h;
    const float scale_x = s.win_w / (float)s.out_w;
    // mirror bit 1 flips horizontally, bit 2 vertically (fn.resize_crop_mirror's mask)
    const int src_ox = (s.mirror & 1) ? s.out_w - 1 - ox : ox;
    const int src_oy = (s.mirror & 2) ? s.out_h - 1 - oy : oy;
    // (2i + 1) * size / (2 * out) rather than (i + 0.5) * scale: exact when the true
    // position is an integer, so nearest-neighbour ties round as in double precision
    const float cy = s.win_y + (float)(2 * src_oy + 1) * s.win_h / (float)(2 * s.out_h);
    const float cx = s.win_x + (float)(2 * src_ox + 1) * s.win_w / (float)(2 * s.out_w);
    const int C = s.in_c;
    float v[4];

    if (!(cy >= 0.f && cy < (float)s.in_h && cx >= 0.f && cx < (float)s.in_w)) {
#pragma unroll
        for (int c = 0; c < 4; ++c) v[c] = s.fill[c];
        store_pixel(out, s, oy, ox, out_c, layout_chw, v);
        return;
    }

    float acc[4] = {0.f, 0.f, 0.f, 0.f};
    if (interp == 0) {
        const int iy = min((int)cy, s.in_h - 1);
        const int ix = min((int)cx, s.in_w - 1);
        const unsigned char* p =
            (const unsigned char*)s.in_ptr + (long long)iy * s.in_row_stride + ix * C;
#pragma unroll
        for (int c = 0; c < 4; ++c)
            if (c < C) acc[c] = (float)p[c];
    } else {
        const float support = interp == 1 ? 1.f : 2.f;
        const float fy = (antialias && scale_y > 1.f) ? scale_y : 1.f;
        const float fx = (antialias && scale_x > 1.f) ? scale_x : 1.f;
        const float inv_fy = 1.f / fy, inv_fx = 1.f / fx;
        // the whole footprint: filter_taps clamps the taps that fall outside the image
        const int y0 = (int)floorf(cy - support * fy + 0.5f);
        const int y1 = (int)floorf(cy + support * fy + 0.5f);
        const int x0 = (int)floorf(cx - support * fx + 0.5f);
        const int x1 = (int)floorf(cx + support * fx + 0.5f);
        float wy_sum = 0.f, wx_sum = 0.f;
        for (int y = y0; y < y1; ++y) wy_sum += filter_weight(interp, (y + 0.5f - cy) * inv_fy);
        for (int x = x0; x < x1; ++x) wx_sum += filter_weight(interp, (x + 0.5f - cx) * inv_fx);
        switch (C) {
            case 1: filter_taps<1>(s, interp, cy, cx, inv_fy, inv_fx, y0, y1, x0, x1, acc); break;
            case 2: filter_taps<2>(s, interp, cy, cx, inv_fy, inv_fx, y0, y1, x0, x1, acc); break;
            case 3: filter_taps<3>(s, interp, cy, cx, inv_fy, inv_fx, y0, y1, x0, x1, acc); break;
            default: filter_taps<4>(s, interp, cy, cx, inv_fy, inv_fx, y0, y1, x0, x1, acc); break;
        }
        const float wsum = wy_sum * wx_sum;
        const float norm = wsum != 0.f ? 1.f / wsum : 0.f;
#pragma unroll
        for (int c = 0; c < 4; ++c) acc[c] *= norm;
    }
#pragma unroll
    for (int c = 0; c < 4; ++c)
        v[c] = c < C ? (acc[c] - s.mean[c]) * s.inv_std[c] : s.fill[c];
    store_pixel(out, s, oy, ox, out_c, layout_chw, v);
}
