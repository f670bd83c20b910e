// The two passes of the two-head layer's pooling (attnclust/_numerics.py) as XLA FFI
// kernels for the CPU, for `make bench` only: what a custom kernel gives where XLA's own
// code cannot compute one exp per score at the rate it reaches on a plain sum of exps.
// The library never loads this file.
//
//   moments:   for each (pair, query q): Z = sum_k e, S1 = sum_k e D, S2 = sum_k e D^2,
//              D = Pk_k - ext_q, e = exp(s_q D), the three sums in one pass over the keys.
//   key_grads: for each (pair, key k): sum_q e_qk (a_q + b_q D_qk), one pass over the queries.
//   exp_sum:   sum_ij exp(a_i b_j), the exp roofline's own loop compiled the same way, so
//              that the roofline is the faster of XLA's exps and these.
//
// One exp per score in each pass, vectorised by the compiler (glibc's vector expf) and
// split over the cores with OpenMP, in chunks handed out as threads finish (dynamic
// scheduling): on a shared machine a core can stall, and equal static shares would then
// make the whole loop wait for it. Built by benchmarks/kernel/build.sh.
#include <cmath>
#include <cstdint>

#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

static ffi::Error Moments(ffi::Buffer<ffi::F32> s, ffi::Buffer<ffi::F32> ext, ffi::Buffer<ffi::F32> pk,
                          ffi::ResultBuffer<ffi::F32> z, ffi::ResultBuffer<ffi::F32> s1,
                          ffi::ResultBuffer<ffi::F32> s2) {
  auto qd = s.dimensions(), kd = pk.dimensions();
  if (qd.size() != 2 || kd.size() != 2 || qd[0] != kd[0])
    return ffi::Error::InvalidArgument("moments: s (n, Q), ext (n, Q) and Pk (n, K) expected");
  const int64_t n = qd[0], Q = qd[1], K = kd[1];
  const float *S = s.typed_data(), *E = ext.typed_data(), *P = pk.typed_data();
  float *Z = z->typed_data(), *S1 = s1->typed_data(), *S2 = s2->typed_data();
#pragma omp parallel for schedule(dynamic, 32)
  for (int64_t r = 0; r < n * Q; r++) {
    const float *p = P + (r / Q) * K;
    const float sq = S[r], eq = E[r];
    float a = 0.f, b = 0.f, c = 0.f;
#pragma omp simd reduction(+ : a, b, c)
    for (int64_t k = 0; k < K; k++) {
      const float d = p[k] - eq;
      const float e = std::exp(sq * d);
      a += e;
      b += e * d;
      c += e * d * d;
    }
    Z[r] = a;
    S1[r] = b;
    S2[r] = c;
  }
  return ffi::Error::Success();
}

static ffi::Error KeyGrads(ffi::Buffer<ffi::F32> s, ffi::Buffer<ffi::F32> ext, ffi::Buffer<ffi::F32> pk,
                           ffi::Buffer<ffi::F32> wa, ffi::Buffer<ffi::F32> wb, ffi::ResultBuffer<ffi::F32> out) {
  auto qd = s.dimensions(), kd = pk.dimensions();
  if (qd.size() != 2 || kd.size() != 2 || qd[0] != kd[0])
    return ffi::Error::InvalidArgument("key_grads: s, ext, a, b (n, Q) and Pk (n, K) expected");
  const int64_t n = qd[0], Q = qd[1], K = kd[1];
  const float *S = s.typed_data(), *E = ext.typed_data(), *P = pk.typed_data();
  const float *A = wa.typed_data(), *B = wb.typed_data();
  float *O = out->typed_data();
#pragma omp parallel for schedule(dynamic, 32)
  for (int64_t r = 0; r < n * K; r++) {
    const int64_t i = r / K;
    const float pkk = P[r];
    const float *sq = S + i * Q, *eq = E + i * Q, *aq = A + i * Q, *bq = B + i * Q;
    float acc = 0.f;
#pragma omp simd reduction(+ : acc)
    for (int64_t q = 0; q < Q; q++) {
      const float d = pkk - eq[q];
      acc += std::exp(sq[q] * d) * (aq[q] + bq[q] * d);
    }
    O[r] = acc;
  }
  return ffi::Error::Success();
}

static ffi::Error ExpSum(ffi::Buffer<ffi::F32> a, ffi::Buffer<ffi::F32> b, ffi::ResultBuffer<ffi::F32> out) {
  const int64_t R = a.element_count(), C = b.element_count();
  const float *A = a.typed_data(), *B = b.typed_data();
  double total = 0.0;
#pragma omp parallel for reduction(+ : total) schedule(dynamic, 8)
  for (int64_t i = 0; i < R; i++) {
    const float ai = A[i];
    float acc = 0.f;
#pragma omp simd reduction(+ : acc)
    for (int64_t j = 0; j < C; j++) acc += std::exp(ai * B[j]);
    total += acc;
  }
  out->typed_data()[0] = static_cast<float>(total);
  return ffi::Error::Success();
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(attnclust_exp_sum, ExpSum,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::F32>>());

XLA_FFI_DEFINE_HANDLER_SYMBOL(attnclust_moments, Moments,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::F32>>());

XLA_FFI_DEFINE_HANDLER_SYMBOL(attnclust_key_grads, KeyGrads,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::F32>>());
