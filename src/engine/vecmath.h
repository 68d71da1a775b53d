/* vecmath: elementwise float kernels written for the vector units.
 *
 * Each is a plain loop the compiler vectorises for the baseline's vector unit, and for AVX2 and
 * AVX-512 picked at load time (OpenMP simd; no -ffast-math, no FMA contraction), so the
 * operations are the IEEE ones the scalar code does: the same bits on every machine.
 */
#ifndef ATTNSCOPE_VECMATH_H
#define ATTNSCOPE_VECMATH_H

#include <stdbool.h>
#include <stddef.h>

/* y (count) = exp(x - shift), within 1 ulp of the correctly rounded value (a Cephes polynomial;
 * checked on 22.9 M points over [-87, 88]); exp of anything under -87.3 is 0, -inf included. y may
 * equal x. */
void attn_exp_shift(float *y, const float *x, float shift, int count);
/* The sum of y (count) in 8 lanes, lane j % 8 for y[j], then ((0+1)+(2+3))+((4+5)+(6+7)): a
 * row's sum is the same bits whatever zeros follow it (a causal row and its full twin). */
float attn_sum_lanes(const float *y, int count);
/* True when v (count) holds an inf or a nan: any value whose exponent bits are all ones, OR-ed
 * in 8 lanes the compiler vectorises (a loop that stops at the first bad value does not; a
 * max of magnitudes needs SSE4.1's unsigned max and ran at a tenth of the speed): the forward
 * pass's finite check reads every stage with it (forward.c), about 50 GB/s from cache. */
bool attn_any_nonfinite(const float *v, size_t count);
/* y (count) = x / d, each an IEEE division as a scalar loop does it; true when any y is an inf or
 * a nan (attn_any_nonfinite's test, in the same pass: the causal heads' scaled scores are checked
 * as they are made). y may equal x. */
bool attn_div_nonfinite(float *y, const float *x, float d, int count);
/* The largest of x (count) by `>`, in 16 lanes: a nan is never picked, -inf when there is
 * nothing else (count 0 included). Which zero wins between -0 and +0 may differ from a scalar
 * loop's; x - max is the same number either way. */
float attn_max_lanes(const float *x, int count);
/* y (count) = v. */
void attn_fill(float *y, float v, size_t count);
/* y (count) = x * s. y may equal x. */
void attn_scale(float *y, const float *x, float s, int count);
/* y (count) = a + b. y may equal a or b. */
void attn_add(float *y, const float *a, const float *b, size_t count);
/* y (count) = GELU's tanh approximation (GPT-2's gelu_new) in float, as
 * x / (1 + exp(-2u)), u = sqrt(2/pi) (x + 0.044715 x^3): equal to 0.5 x (1 + tanh u), without
 * its cancellation for negative x; at most 5.2e-7 from the double-precision value. */
void attn_gelu_tanh(float *y, const float *x, size_t count);

#endif
