// Random numbers on the GPU from chute's per-sample Philox streams (chute/gpu/random_kernels.py).
//
// Every sample's stream is NumPy's Generator(Philox(key, counter)): word w of the stream is
// word w % 4 of Philox4x64-10(key, counter + w / 4 + 1). Where the CPU backend draws one
// word per element (random(), uniform(), coin flips, salt and pepper) or draws bounded
// integers in order (uniform over `values`), these kernels compute the same words and the
// same arithmetic (no fused multiply-add: __dmul_rn / __dadd_rn), so the outputs are
// bit-equal to the CPU's. Normal and Poisson draws follow the same distributions with
// other algorithms (Box-Muller from two words; inversion, or PTRS on a per-element
// sub-stream) and differ from the CPU's values.
#include <cuda_fp16.h>

struct RandSample {                 // mirrors RAND_SAMPLE in chute/gpu/random_kernels.py
  unsigned long long key[2];
  unsigned long long ctr[4];
  unsigned long long in_ptr;        // noise: the input sample; uniform values: the values
  unsigned long long out_ptr;
  long long n;                      // elements of the output sample
  long long inner;                  // values: how many; salt and pepper: elements per draw
  double a, b, c;                   // per-kind parameters (see each kernel)
  unsigned long long salt, pepper;  // salt and pepper: the values' bytes in the output type
};

// dtype codes (DTYPE_CODES in random_kernels.py)
enum { K_BOOL, K_I8, K_U8, K_I16, K_U16, K_I32, K_U32, K_I64, K_U64, K_F16, K_F32, K_F64 };

__device__ __forceinline__ void philox_rounds(unsigned long long k0, unsigned long long k1,
                                              unsigned long long c[4]) {
  unsigned long long c0 = c[0], c1 = c[1], c2 = c[2], c3 = c[3];
  for (int r = 0; r < 10; ++r) {
    if (r) {
      k0 += 0x9E3779B97F4A7C15ULL;
      k1 += 0xBB67AE8584CAA73BULL;
    }
    const unsigned long long hi0 = __umul64hi(0xD2E7470EE14C6C93ULL, c0);
    const unsigned long long lo0 = 0xD2E7470EE14C6C93ULL * c0;
    const unsigned long long hi1 = __umul64hi(0xCA5A826395121157ULL, c2);
    const unsigned long long lo1 = 0xCA5A826395121157ULL * c2;
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
  }
  c[0] = c0;
  c[1] = c1;
  c[2] = c2;
  c[3] = c3;
}

// Words 4 * block .. 4 * block + 3 of the stream whose counter word 0 is moved on by `step`.
__device__ __forceinline__ void stream_block(const RandSample &s, unsigned long long block,
                                             unsigned long long w[4]) {
  const unsigned long long step = block + 1;  // NumPy moves the counter on before each block
  w[0] = s.ctr[0] + step;
  w[1] = s.ctr[1];
  w[2] = s.ctr[2];
  w[3] = s.ctr[3];
  if (w[0] < step && ++w[1] == 0 && ++w[2] == 0) ++w[3];  // carry
  philox_rounds(s.key[0], s.key[1], w);
}

__device__ __forceinline__ double to_double(unsigned long long w) {
  return (double)(w >> 11) * (1.0 / 9007199254740992.0);  // Generator.random(): exact
}

__device__ __forceinline__ double saturate(double v, double lo, double hi) {
  return fmax(lo, fmin(hi, rint(v)));
}

__device__ void store(unsigned long long out, long long i, int code, double v) {
  switch (code) {
    case K_BOOL: ((bool *)out)[i] = v != 0.0; break;
    case K_I8: ((signed char *)out)[i] = (signed char)saturate(v, -128.0, 127.0); break;
    case K_U8: ((unsigned char *)out)[i] = (unsigned char)saturate(v, 0.0, 255.0); break;
    case K_I16: ((short *)out)[i] = (short)saturate(v, -32768.0, 32767.0); break;
    case K_U16: ((unsigned short *)out)[i] = (unsigned short)saturate(v, 0.0, 65535.0); break;
    case K_I32: ((int *)out)[i] = (int)saturate(v, -2147483648.0, 2147483647.0); break;
    case K_U32: ((unsigned int *)out)[i] = (unsigned int)saturate(v, 0.0, 4294967295.0); break;
    case K_I64:
      ((long long *)out)[i] = (long long)saturate(v, -9223372036854775808.0, 9223372036854774784.0);
      break;
    case K_U64:
      ((unsigned long long *)out)[i] =
          (unsigned long long)saturate(v, 0.0, 18446744073709549568.0);
      break;
    case K_F16: ((__half *)out)[i] = __double2half(v); break;
    case K_F32: ((float *)out)[i] = __double2float_rn(v); break;
    default: ((double *)out)[i] = v; break;
  }
}

__device__ double load(unsigned long long in, long long i, int code) {
  switch (code) {
    case K_BOOL: return ((const bool *)in)[i] ? 1.0 : 0.0;
    case K_I8: return ((const signed char *)in)[i];
    case K_U8: return ((const unsigned char *)in)[i];
    case K_I16: return ((const short *)in)[i];
    case K_U16: return ((const unsigned short *)in)[i];
    case K_I32: return ((const int *)in)[i];
    case K_U32: return ((const unsigned int *)in)[i];
    case K_I64: return (double)((const long long *)in)[i];
    case K_U64: return (double)((const unsigned long long *)in)[i];
    case K_F16: return __half2float(((const __half *)in)[i]);
    case K_F32: return ((const float *)in)[i];
    default: return ((const double *)in)[i];
  }
}

__device__ __forceinline__ int item_size(int code) {
  switch (code) {
    case K_BOOL: case K_I8: case K_U8: return 1;
    case K_I16: case K_U16: case K_F16: return 2;
    case K_I32: case K_U32: case K_F32: return 4;
    default: return 8;
  }
}

#define FOR_BLOCKS(s, count)                                                        \
  for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < (count); \
       t += (long long)gridDim.x * blockDim.x)

// a = low, b = high - low (computed on the host in double, as Generator.uniform does)
extern "C" __global__ void uniform_range(const RandSample *samples, int code) {
  const RandSample &s = samples[blockIdx.y];
  FOR_BLOCKS(s, (s.n + 3) >> 2) {
    unsigned long long w[4];
    stream_block(s, t, w);
    for (int j = 0; j < 4 && 4 * t + j < s.n; ++j)
      store(s.out_ptr, 4 * t + j, code, __dadd_rn(s.a, __dmul_rn(s.b, to_double(w[j]))));
  }
}

// a = probability: 1 where Generator.random() < probability
extern "C" __global__ void coin_flip(const RandSample *samples, int code) {
  const RandSample &s = samples[blockIdx.y];
  FOR_BLOCKS(s, (s.n + 3) >> 2) {
    unsigned long long w[4];
    stream_block(s, t, w);
    for (int j = 0; j < 4 && 4 * t + j < s.n; ++j)
      store(s.out_ptr, 4 * t + j, code, to_double(w[j]) < s.a ? 1.0 : 0.0);
  }
}

// Box-Muller from words 2e and 2e + 1: a standard normal for element e.
__device__ __forceinline__ double box_muller(unsigned long long w0, unsigned long long w1) {
  const double u1 = 1.0 - to_double(w0);  // (0, 1]
  return sqrt(-2.0 * log(u1)) * cospi(2.0 * to_double(w1));
}

// a = mean, b = stddev
extern "C" __global__ void normal(const RandSample *samples, int code) {
  const RandSample &s = samples[blockIdx.y];
  FOR_BLOCKS(s, (s.n + 1) >> 1) {
    unsigned long long w[4];
    stream_block(s, t, w);
    for (int j = 0; j < 2 && 2 * t + j < s.n; ++j)
      store(s.out_ptr, 2 * t + j, code, s.a + s.b * box_muller(w[2 * j], w[2 * j + 1]));
  }
}

// The 32-bit halves of a sample's stream in Generator order: low half, then high half.
struct Halves {
  unsigned long long words[4];
  long long block = -1;
  long long next = 0;  // index of the next half
};

__device__ unsigned int next32(const RandSample &s, Halves &h) {
  const long long word = h.next >> 1;
  if ((word >> 2) != h.block) {
    h.block = word >> 2;
    stream_block(s, (unsigned long long)h.block, h.words);
  }
  const unsigned long long w = h.words[word & 3];
  return (h.next++ & 1) ? (unsigned int)(w >> 32) : (unsigned int)w;
}

// One thread per sample: Generator.integers(0, inner) per element (Lemire's method with
// NumPy's rejection rule), then values[k]. inner < 2**32.
extern "C" __global__ void uniform_values(const RandSample *samples, int count, int code) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= count) return;
  const RandSample &s = samples[i];
  const double *values = (const double *)s.in_ptr;
  const unsigned long long rng = (unsigned long long)s.inner - 1;
  Halves h;
  for (long long e = 0; e < s.n; ++e) {
    unsigned long long k = 0;
    if (rng == 0xFFFFFFFFULL) {
      k = next32(s, h);
    } else if (rng > 0) {
      const unsigned long long excl = rng + 1;
      unsigned long long m = (unsigned long long)next32(s, h) * excl;
      if ((m & 0xFFFFFFFFULL) < excl) {
        const unsigned long long threshold = (0xFFFFFFFFULL - rng) % excl;
        while ((m & 0xFFFFFFFFULL) < threshold) m = (unsigned long long)next32(s, h) * excl;
      }
      k = m >> 32;
    }
    store(s.out_ptr, e, code, values[k]);
  }
}

// a = mean, b = stddev: x + noise in float32 (float64 for float64 data), rounded and
// saturated to the input type, as the CPU backend.
extern "C" __global__ void gaussian_noise(const RandSample *samples, int code) {
  const RandSample &s = samples[blockIdx.y];
  FOR_BLOCKS(s, (s.n + 1) >> 1) {
    unsigned long long w[4];
    stream_block(s, t, w);
    for (int j = 0; j < 2 && 2 * t + j < s.n; ++j) {
      const long long e = 2 * t + j;
      const double noise = s.a + s.b * box_muller(w[2 * j], w[2 * j + 1]);
      const double x = load(s.in_ptr, e, code);
      const double v = code == K_F64 ? x + noise
                                     : (double)__fadd_rn((float)x, __double2float_rn(noise));
      store(s.out_ptr, e, code, v);
    }
  }
}

__device__ __forceinline__ void copy_item(unsigned long long out, long long e,
                                          const unsigned char *src, int size) {
  unsigned char *dst = (unsigned char *)out + e * size;
  for (int k = 0; k < size; ++k) dst[k] = src[k];
}

// a = prob, b = prob * salt_vs_pepper; one draw per `inner` consecutive elements (a pixel's
// channels, or 1 with per_channel)
extern "C" __global__ void salt_and_pepper(const RandSample *samples, int code) {
  const RandSample &s = samples[blockIdx.y];
  const int size = item_size(code);
  const long long draws = s.inner > 0 ? s.n / s.inner : 0;
  FOR_BLOCKS(s, (draws + 3) >> 2) {
    unsigned long long w[4];
    stream_block(s, t, w);
    for (int j = 0; j < 4 && 4 * t + j < draws; ++j) {
      const double u = to_double(w[j]);
      for (long long c = 0; c < s.inner; ++c) {
        const long long e = (4 * t + j) * s.inner + c;
        const unsigned char *src =
            u < s.a ? (const unsigned char *)(u < s.b ? &s.salt : &s.pepper)
                    : (const unsigned char *)s.in_ptr + e * size;
        copy_item(s.out_ptr, e, src, size);
      }
    }
  }
}

// Element e's own sub-stream for rejection sampling: blocks (e << 20) + j of the counter.
__device__ __forceinline__ double sub_uniform(const RandSample &s, long long e, long long *k,
                                              unsigned long long w[4]) {
  if ((*k & 3) == 0) stream_block(s, ((unsigned long long)e << 20) + (*k >> 2), w);
  return to_double(w[(*k)++ & 3]);
}

// Poisson(lam): inversion below 10, else Hormann's PTRS (as NumPy's poisson for lam >= 10).
__device__ double poisson(const RandSample &s, long long e, double lam) {
  if (!(lam > 0.0)) return 0.0;
  unsigned long long w[4];
  long long k = 0;
  if (lam < 10.0) {
    const double u = sub_uniform(s, e, &k, w);
    double p = exp(-lam), cdf = p;
    long long n = 0;
    while (u > cdf && n < 1000) {
      ++n;
      p *= lam / (double)n;
      cdf += p;
    }
    return (double)n;
  }
  const double slam = sqrt(lam), loglam = log(lam);
  const double b = 0.931 + 2.53 * slam;
  const double a = -0.059 + 0.02483 * b;
  const double invalpha = 1.1239 + 1.1328 / (b - 3.4);
  const double vr = 0.9277 - 3.6224 / (b - 2.0);
  for (;;) {
    const double u = sub_uniform(s, e, &k, w) - 0.5;
    const double v = sub_uniform(s, e, &k, w);
    const double us = 0.5 - fabs(u);
    const double n = floor((2.0 * a / us + b) * u + lam + 0.43);
    if (us >= 0.07 && v <= vr) return n;
    if (n < 0.0 || (us < 0.013 && v > us)) continue;
    if (log(v) + log(invalpha) - log(a / (us * us) + b) <= -lam + n * loglam - lgamma(n + 1.0))
      return n;
  }
}

// a = factor: poisson(max(0, x / factor)) * factor, through float32 (float64 data);
// factor 0 copies the sample
extern "C" __global__ void shot_noise(const RandSample *samples, int code) {
  const RandSample &s = samples[blockIdx.y];
  const int size = item_size(code);
  FOR_BLOCKS(s, s.n) {
    if (s.a == 0.0) {
      copy_item(s.out_ptr, t, (const unsigned char *)s.in_ptr + t * size, size);
      continue;
    }
    const double lam = fmax(0.0, load(s.in_ptr, t, code) / s.a);
    double v = poisson(s, t, lam) * s.a;
    if (code != K_F64) v = (double)__double2float_rn(v);
    store(s.out_ptr, t, code, v);
  }
}
