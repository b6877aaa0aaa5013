// LZ4 block inflation, one thread per chunk (chute/ops/decoders/inflate_gpu.py).
//
// Raw LZ4 blocks (no frame): sequences of a token (literal length high nibble, match
// length - 4 low nibble), extra length bytes while 255, the literals, then a 2-byte
// little-endian offset back into the output and the match. Every read and write is
// bounds-checked: malformed data sets status 1, output longer than the chunk's capacity
// status 2, and never touches memory outside the chunk. The tail past the inflated
// bytes is zero-filled (DALI's rule).

__device__ static int lz4_read_length(const unsigned char *src, long long len, long long *ip,
                                      long long *value) {
  unsigned int b;
  do {
    if (*ip >= len) return 1;
    b = src[(*ip)++];
    *value += b;
  } while (b == 255);
  return 0;
}

__device__ static int lz4_inflate_one(const unsigned char *src, long long len,
                                      unsigned char *dst, long long cap, long long *written) {
  long long ip = 0, op = 0;
  while (ip < len) {
    const unsigned int token = src[ip++];
    long long lit = token >> 4;
    if (lit == 15 && lz4_read_length(src, len, &ip, &lit)) return 1;
    if (lit > len - ip) return 1;
    if (lit > cap - op) return 2;
    for (long long k = 0; k < lit; ++k) dst[op + k] = src[ip + k];
    ip += lit;
    op += lit;
    if (ip >= len) break;  // the last sequence holds literals only
    if (len - ip < 2) return 1;
    const long long offset = (long long)src[ip] | ((long long)src[ip + 1] << 8);
    ip += 2;
    if (offset == 0 || offset > op) return 1;
    long long match = token & 15;
    if (match == 15 && lz4_read_length(src, len, &ip, &match)) return 1;
    match += 4;
    if (match > cap - op) return 2;
    for (long long k = 0; k < match; ++k) dst[op + k] = dst[op - offset + k];  // may overlap
    op += match;
  }
  *written = op;
  return 0;
}

extern "C" __global__ void lz4_inflate(const unsigned long long *in_ptr, const long long *in_len,
                                       const unsigned long long *out_ptr, const long long *out_cap,
                                       int *status, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  unsigned char *dst = (unsigned char *)out_ptr[i];
  const long long cap = out_cap[i];
  long long written = 0;
  const int err = lz4_inflate_one((const unsigned char *)in_ptr[i], in_len[i], dst, cap, &written);
  for (long long k = err ? 0 : written; k < cap; ++k) dst[k] = 0;
  status[i] = err;
}
