// Batched crop + horizontal mirror + normalize + layout + cast, no resampling: one launch
// per batch. Output pixel (oy, ox) of sample n reads input pixel
//     (win_y + oy, win_x + ox')   with ox' = out_w - 1 - ox when mirrored,
// where (win_y, win_x) is the integer crop anchor. Pixels outside the input, and output
// channels beyond the input's (pad_output), get the fill value. Grid: (x, y, samples).

extern "C" __global__ void crop_mirror_normalize_batch(const SampleDesc* __restrict__ samples,
                                                       out_t* __restrict__ out, int out_c,
                                                       int layout_chw) {
    const SampleDesc& s = samples[blockIdx.z];
    const int ox = blockIdx.x * blockDim.x + threadIdx.x;
    const int oy = blockIdx.y * blockDim.y + threadIdx.y;
    if (ox >= s.out_w || oy >= s.out_h) return;

    const int iy = __float2int_rn(s.win_y) + oy;
    const int ix = __float2int_rn(s.win_x) + (s.mirror ? s.out_w - 1 - ox : ox);
    const bool inside = iy >= 0 && iy < s.in_h && ix >= 0 && ix < s.in_w;
    const unsigned char* p = (const unsigned char*)s.in_ptr;
    if (inside) p += (long long)iy * s.in_row_stride + ix * s.in_c;
    float v[4];
#pragma unroll
    for (int c = 0; c < 4; ++c)
        v[c] = (inside && c < s.in_c) ? ((float)p[c] - s.mean[c]) * s.inv_std[c] : s.fill[c];
    store_pixel(out, s, oy, ox, out_c, layout_chw, v);
}
