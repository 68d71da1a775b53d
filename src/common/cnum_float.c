/* cnum_float: a float32 as its shortest round-trip text, without printf (see cnum.h).
 *
 * The text is defined by the loop it replaces, attn_cnum_format_float_ref: the first of %.6g,
 * %.7g, %.8g whose text reads back to the same bits both ways readers read it (decimal ->
 * double -> float32, as strtod then a cast, NumPy and torch do; and rounded once to float32, as
 * strtof does), else %.9g. Files written before compare equal byte for byte, but for the rare
 * float whose shorter text the two readers disagreed on (0x15ae43fe: "7.038531e-26" read back
 * through strtof as its neighbour; found by bench/float_exhaustive --round-trip). Outside the
 * margin below the two readers agree, so the fast path needs no change for it: inside, the
 * reference decides.
 *
 * How, in the manner of Ryu and Schubfach (Adams 2018, Giulietti 2020): x = m * 2^e2 is scaled
 * by a power of ten to y = x * 10^s in [1e8, 1e10), one 64 x 64 -> 128-bit product with a table
 * of 10^s's 64-bit mantissas, held as a fixed-point number with 62 fraction bits. g, the gap
 * between x and its neighbours in the same units, comes from the same product. Each precision
 * P then is integer arithmetic: the P-digit rounding of y (to nearest, ties to even as printf
 * does) and whether that decimal lies inside x's rounding interval (closer than half a gap).
 *
 * The table's mantissas are rounded, so y is known to within 2^-30 (2^32 of its units); and
 * reading back through a double moves a decimal by up to half a double's ulp, 2^-29 of a gap.
 * A decision closer than that to its boundary (an exact decimal tie, a decimal within a hair of
 * the midpoint between two floats) is not taken here: the text then comes from the reference
 * loop. That happens for about one float32 in a million (powers of two with exact short
 * decimals, mostly); bench/float_exhaustive checks all 2^32 bit patterns against the
 * reference and counts them.
 */
#include "common/cnum.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* Without 128-bit integers (32-bit targets) every float takes the reference loop. */
#ifdef __SIZEOF_INT128__
__extension__ typedef unsigned __int128 u128;

/* 10^s ~ m * 2^e, m in [2^63, 2^64) rounded to nearest, for s = POW10_MIN .. 53 (every scale a
 * float32 needs: 8 - floor(log10 x) for x from 1.4e-45 to 3.4e38). Made with Python:
 *   for s in range(-30, 54): v = Fraction(10)**s; e = the e with v / 2**e in [2**63, 2**64);
 *                            m = round(v / 2**e) */
#define POW10_MIN (-30)
static const struct {
    uint64_t m;
    int e;
} pow10_table[] = {
    {0xa2425ff75e14fc32u, -163}, /* 1e-30 */
    {0xcad2f7f5359a3b3eu, -160}, /* 1e-29 */
    {0xfd87b5f28300ca0eu, -157}, /* 1e-28 */
    {0x9e74d1b791e07e48u, -153}, /* 1e-27 */
    {0xc612062576589ddbu, -150}, /* 1e-26 */
    {0xf79687aed3eec551u, -147}, /* 1e-25 */
    {0x9abe14cd44753b53u, -143}, /* 1e-24 */
    {0xc16d9a0095928a27u, -140}, /* 1e-23 */
    {0xf1c90080baf72cb1u, -137}, /* 1e-22 */
    {0x971da05074da7befu, -133}, /* 1e-21 */
    {0xbce5086492111aebu, -130}, /* 1e-20 */
    {0xec1e4a7db69561a5u, -127}, /* 1e-19 */
    {0x9392ee8e921d5d07u, -123}, /* 1e-18 */
    {0xb877aa3236a4b449u, -120}, /* 1e-17 */
    {0xe69594bec44de15bu, -117}, /* 1e-16 */
    {0x901d7cf73ab0acd9u, -113}, /* 1e-15 */
    {0xb424dc35095cd80fu, -110}, /* 1e-14 */
    {0xe12e13424bb40e13u, -107}, /* 1e-13 */
    {0x8cbccc096f5088ccu, -103}, /* 1e-12 */
    {0xafebff0bcb24aaffu, -100}, /* 1e-11 */
    {0xdbe6fecebdedd5bfu, -97},  /* 1e-10 */
    {0x89705f4136b4a597u, -93},  /* 1e-9 */
    {0xabcc77118461cefdu, -90},  /* 1e-8 */
    {0xd6bf94d5e57a42bcu, -87},  /* 1e-7 */
    {0x8637bd05af6c69b6u, -83},  /* 1e-6 */
    {0xa7c5ac471b478423u, -80},  /* 1e-5 */
    {0xd1b71758e219652cu, -77},  /* 1e-4 */
    {0x83126e978d4fdf3bu, -73},  /* 1e-3 */
    {0xa3d70a3d70a3d70au, -70},  /* 1e-2 */
    {0xcccccccccccccccdu, -67},  /* 1e-1 */
    {0x8000000000000000u, -63},  /* 1e0 */
    {0xa000000000000000u, -60},  /* 1e1 */
    {0xc800000000000000u, -57},  /* 1e2 */
    {0xfa00000000000000u, -54},  /* 1e3 */
    {0x9c40000000000000u, -50},  /* 1e4 */
    {0xc350000000000000u, -47},  /* 1e5 */
    {0xf424000000000000u, -44},  /* 1e6 */
    {0x9896800000000000u, -40},  /* 1e7 */
    {0xbebc200000000000u, -37},  /* 1e8 */
    {0xee6b280000000000u, -34},  /* 1e9 */
    {0x9502f90000000000u, -30},  /* 1e10 */
    {0xba43b74000000000u, -27},  /* 1e11 */
    {0xe8d4a51000000000u, -24},  /* 1e12 */
    {0x9184e72a00000000u, -20},  /* 1e13 */
    {0xb5e620f480000000u, -17},  /* 1e14 */
    {0xe35fa931a0000000u, -14},  /* 1e15 */
    {0x8e1bc9bf04000000u, -10},  /* 1e16 */
    {0xb1a2bc2ec5000000u, -7},   /* 1e17 */
    {0xde0b6b3a76400000u, -4},   /* 1e18 */
    {0x8ac7230489e80000u, 0},    /* 1e19 */
    {0xad78ebc5ac620000u, 3},    /* 1e20 */
    {0xd8d726b7177a8000u, 6},    /* 1e21 */
    {0x878678326eac9000u, 10},   /* 1e22 */
    {0xa968163f0a57b400u, 13},   /* 1e23 */
    {0xd3c21bcecceda100u, 16},   /* 1e24 */
    {0x84595161401484a0u, 20},   /* 1e25 */
    {0xa56fa5b99019a5c8u, 23},   /* 1e26 */
    {0xcecb8f27f4200f3au, 26},   /* 1e27 */
    {0x813f3978f8940984u, 30},   /* 1e28 */
    {0xa18f07d736b90be5u, 33},   /* 1e29 */
    {0xc9f2c9cd04674edfu, 36},   /* 1e30 */
    {0xfc6f7c4045812296u, 39},   /* 1e31 */
    {0x9dc5ada82b70b59eu, 43},   /* 1e32 */
    {0xc5371912364ce305u, 46},   /* 1e33 */
    {0xf684df56c3e01bc7u, 49},   /* 1e34 */
    {0x9a130b963a6c115cu, 53},   /* 1e35 */
    {0xc097ce7bc90715b3u, 56},   /* 1e36 */
    {0xf0bdc21abb48db20u, 59},   /* 1e37 */
    {0x96769950b50d88f4u, 63},   /* 1e38 */
    {0xbc143fa4e250eb31u, 66},   /* 1e39 */
    {0xeb194f8e1ae525fdu, 69},   /* 1e40 */
    {0x92efd1b8d0cf37beu, 73},   /* 1e41 */
    {0xb7abc627050305aeu, 76},   /* 1e42 */
    {0xe596b7b0c643c719u, 79},   /* 1e43 */
    {0x8f7e32ce7bea5c70u, 83},   /* 1e44 */
    {0xb35dbf821ae4f38cu, 86},   /* 1e45 */
    {0xe0352f62a19e306fu, 89},   /* 1e46 */
    {0x8c213d9da502de45u, 93},   /* 1e47 */
    {0xaf298d050e4395d7u, 96},   /* 1e48 */
    {0xdaf3f04651d47b4cu, 99},   /* 1e49 */
    {0x88d8762bf324cd10u, 103},  /* 1e50 */
    {0xab0e93b6efee0054u, 106},  /* 1e51 */
    {0xd5d238a4abe98068u, 109},  /* 1e52 */
    {0x85a36366eb71f041u, 113},  /* 1e53 */
};

static const uint64_t small_pow10[] = {
    1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000, 1000000000, 10000000000u};

static const char digit_pairs[] = "00010203040506070809101112131415161718192021222324252627282930"
                                  "31323334353637383940414243444546474849505152535455565758596061"
                                  "62636465666768697071727374757677787980818283848586878889909192"
                                  "93949596979899";

static u128 abs_diff(u128 a, u128 b)
{
    return a > b ? a - b : b - a;
}

/* The n digits of v (leading zeros kept) written to end - n .. end - 1. */
static inline void put_digits(char *end, uint64_t v, int n)
{
    for (; n >= 2; n -= 2) {
        end -= 2;
        memcpy(end, digit_pairs + 2 * (v % 100), 2);
        v /= 100;
    }
    if (n)
        end[-1] = (char)('0' + v % 10);
}

/* The P significant digits d (10^(P-1) <= d < 10^P, or 10^P after a carry) at decimal exponent
 * x, as %.Pg writes them: trailing zeros dropped, e-style when x < -4 or x >= P. t has room for
 * 40 characters: whole groups of zeros are stored and the length counted. Returns the length. */
static int put_g(char *t, uint64_t d, int P, int x)
{
    if (d == small_pow10[P]) { /* 9.99...5 rounded up to 10.0 */
        d = small_pow10[P - 1];
        x++;
    }
    int len = P;
    while (d % 10 == 0) { /* d > 0 */
        d /= 10;
        len--;
    }
    static const char zeros[8] = "00000000";
    if (x < -4 || x >= P) { /* d.ddde-xx */
        put_digits(t + 1 + len, d, len);
        t[0] = t[1];
        int n = 1;
        if (len > 1) {
            t[1] = '.';
            n = len + 1;
        }
        int ax = x < 0 ? -x : x; /* at most 45 */
        t[n] = 'e';
        t[n + 1] = x < 0 ? '-' : '+';
        memcpy(t + n + 2, digit_pairs + 2 * ax, 2);
        return n + 4;
    }
    if (x < 0) { /* 0.000ddd */
        memcpy(t, "0.000000", 8);
        int z = 2 - x - 1;
        put_digits(t + z + len, d, len);
        return z + len;
    }
    int whole = x + 1;  /* digits before the point */
    if (len <= whole) { /* ddd000 */
        put_digits(t + len, d, len);
        memcpy(t + len, zeros, 8);
        return whole;
    }
    uint64_t p10 = small_pow10[len - whole]; /* ddd.ddd */
    put_digits(t + whole, d / p10, whole);
    t[whole] = '.';
    put_digits(t + len + 1, d % p10, len - whole);
    return len + 1;
}

/* v rounded to a double's 53 significant bits, to nearest, ties to even; false when that is
 * 2^128 (past every float's interval). */
static bool round_to_double(u128 *out, u128 v)
{
    uint64_t hi = (uint64_t)(v >> 64);
    int nb = hi ? 128 - __builtin_clzll(hi) : v ? 64 - __builtin_clzll((uint64_t)v) : 0;
    if (nb <= 53) {
        *out = v;
        return true;
    }
    int sh = nb - 53;
    u128 low = v & (((u128)1 << sh) - 1), half = (u128)1 << (sh - 1), top = v >> sh;
    if (low > half || (low == half && (top & 1)))
        top++;
    if (sh + 54 > 128 && top >> (128 - sh))
        return false;
    *out = top << sh;
    return true;
}

/* x = m * 2^e2 >= 1e9, an integer below 2^128: exact integer arithmetic throughout, and the
 * double a decimal reads back as computed exactly, so no case is left to the reference. */
static int text_integer(char *t, uint32_t m, int e2, int xe, bool power_of_two)
{
    u128 xi = (u128)m << e2, pow10[39];
    pow10[0] = 1;
    for (int i = 1; i < 39; i++)
        pow10[i] = pow10[i - 1] * 10;
    int x10 = xe + 1 <= 38 && xi >= pow10[xe + 1] ? xe + 1 : xe;
    /* Nine digits by one division; fewer from them. */
    u128 unit = pow10[x10 - 8];
    uint64_t q9 = (uint64_t)(xi / unit);
    u128 rem9 = xi % unit;
    u128 up = (u128)1 << (e2 - 1), down = power_of_two ? up >> 1 : up;
    for (int P = 6; P <= 9; P++) {
        uint64_t r = small_pow10[9 - P], q = q9 / r;
        u128 pw = pow10[x10 - P + 1], rem = (u128)(q9 % r) * unit + rem9, half = pw >> 1;
        bool round_up = rem > half || (rem == half && (q & 1));
        if (P < 9) {
            u128 dist = round_up ? pw - rem : rem, bound = round_up ? up : down;
            if (dist >= 2 * bound)
                continue; /* far outside, however it reads back */
            u128 d = round_up ? xi + dist : xi - dist, back;
            if (!round_to_double(&back, d))
                continue;
            u128 off = back >= xi ? back - xi : xi - back;
            u128 lim = back >= xi ? up : down;
            if (off > lim || (off == lim && (m & 1)))
                continue; /* reads back as a neighbour (a tie goes to the even one) */
        }
        return put_g(t, q + round_up, P, x10);
    }
    return -1; /* not reached */
}

/* y = q9 * unit + rem9 (y's units: 62 fraction bits) rounded to 9 - log10(r) digits into *d, to
 * nearest, ties to even, as printf rounds. Then, with check, whether that decimal reads back as
 * x: 1 when it does, 0 when it reads back as a neighbour (it is half a gap or more away: up or
 * down, the half gaps above and below; a midpoint exactly goes to the even one, and x is even
 * unless odd). -1 when y (known to within err) is too near a tie, or the decimal too near a
 * midpoint (within margin), to tell. */
static inline int round_to(uint64_t *d, uint32_t r, uint64_t q9, u128 rem9, u128 unit, u128 err,
                           u128 margin, u128 up, u128 down, bool odd, bool check)
{
    uint64_t q = q9 / r;
    u128 pw = r * unit, rem = (u128)(q9 % r) * unit + rem9, half = pw >> 1;
    if (rem != half && abs_diff(rem, half) <= err)
        return -1;
    bool round_up = rem > half || (rem == half && (q & 1));
    *d = q + round_up;
    if (!check)
        return 1;
    u128 dist = round_up ? pw - rem : rem, bound = round_up ? up : down;
    if (err == 0 && dist == bound)
        return !odd;
    if (abs_diff(dist, bound) <= margin) /* the double it reads back as decides */
        return -1;
    return dist < bound;
}

/* The text into t (40 bytes), or -1. */
static int float_text(char *t, float x)
{
    uint32_t bits;
    memcpy(&bits, &x, sizeof(bits));
    uint32_t biased = (bits >> 23) & 0xffu, frac = bits & 0x7fffffu;
    if (biased == 0xffu) {
        const char *name = frac ? "nan" : bits >> 31 ? "-inf" : "inf";
        memcpy(t, name, 4);
        return name[3] ? 4 : 3;
    }
    int sign = (int)(bits >> 31);
    t[0] = '-';
    t += sign;
    if (biased == 0 && frac == 0) {
        t[0] = '0';
        return sign + 1;
    }
    /* x = m * 2^e2, m < 2^24; floor(log2 x) = b; floor(log10 x) is xe or xe + 1. */
    uint32_t m = biased ? frac | 1u << 23 : frac;
    int e2 = biased ? (int)biased - 150 : -149;
    int b = e2 + 31 - __builtin_clz(m);
    int xe = (b * 78913) >> 18; /* floor(b * log10 2) for |b| < 300 (GCC shifts arithmetically) */
    int s = 8 - xe;
    bool power_of_two = frac == 0 && biased > 1; /* its neighbour below is half as far */
    if (s < 0) {
        int n = text_integer(t, m, e2, xe, power_of_two);
        return n < 0 ? -1 : sign + n;
    }
    /* g = 2^e2 * 10^s and y = m * g, with 62 fraction bits: g in [5.9, 1e10], so the shift is
       1..32 and y < 1e10 * 2^62 < 2^96. */
    int sh = pow10_table[s - POW10_MIN].e + e2 + 62;
    u128 g = (u128)pow10_table[s - POW10_MIN].m << sh;
    u128 y = g * m;
    /* 10^0 .. 10^27 are exact in the table (5^27 < 2^63), and so is y: exact ties are then
       seen as such. Past it, err bounds the table's rounding: y * 2^-64 < 2^32 units. Only the
       exact scales can hold a tie: x >= 1e9 is an even integer, and x < 1e-19 has over 40
       significant digits. */
    const u128 err = s >= 0 && s <= 27 ? 0 : (u128)1 << 33;
    const u128 one = (u128)1 << 62;
    const u128 e8 = (u128)100000000u * one, e9 = (u128)1000000000u * one;
    if ((err && abs_diff(y, e9) <= err) || y < e8 + err)
        return -1; /* how many digits y has is not certain */
    int x10 = y >= e9 ? xe + 1 : xe;
    /* Nine digits of y and what is left over, in y's units; the roundings to fewer digits come
       from them. */
    uint64_t q9 = (uint64_t)(y >> 62);
    u128 rem9 = y & (one - 1), unit = one;
    if (y >= e9) {
        rem9 |= (u128)(q9 % 10) << 62;
        q9 /= 10;
        unit = 10 * one;
    }
    /* Half the gap to each neighbour: a quarter below a power of two (but the smallest normal,
       whose neighbour below is a subnormal, one gap away). margin: more than a double's half
       ulp (g * 2^-29) plus err. */
    u128 up = g >> 1, down = power_of_two ? g >> 2 : g >> 1, margin = (g >> 26) + err;
    bool odd = m & 1;
    /* %.6g, %.7g, %.8g: the first that reads back, else %.9g. Written out so that each
       division is by a constant. */
    uint64_t d;
    int P = 6, ok = round_to(&d, 1000, q9, rem9, unit, err, margin, up, down, odd, true);
    if (ok == 0) {
        P = 7;
        ok = round_to(&d, 100, q9, rem9, unit, err, margin, up, down, odd, true);
    }
    if (ok == 0) {
        P = 8;
        ok = round_to(&d, 10, q9, rem9, unit, err, margin, up, down, odd, true);
    }
    if (ok == 0) {
        P = 9;
        ok = round_to(&d, 1, q9, rem9, unit, err, margin, up, down, odd, false);
    }
    if (ok < 0)
        return -1;
    return sign + put_g(t, d, P, x10);
}

int attn_cnum_float_text_fast(char *out, float x)
{
    char t[48];
    int n = float_text(t, x);
    memcpy(out, t, CNUM_FLOAT_MAX); /* one store; n < CNUM_FLOAT_MAX */
    return n;
}

#else
int attn_cnum_float_text_fast(char *out, float x)
{
    (void)out;
    (void)x;
    return -1;
}
#endif

int attn_cnum_float_text(char *out, float x)
{
    int n = attn_cnum_float_text_fast(out, x);
    if (n >= 0)
        return n;
    char buf[32];
    n = attn_cnum_format_float_ref(buf, sizeof(buf), x);
    memcpy(out, buf, (size_t)n);
    return n;
}

int attn_cnum_format_float(char *out, size_t size, float x)
{
    char buf[CNUM_FLOAT_MAX];
    int n = attn_cnum_float_text(buf, x);
    if (size > 0) {
        size_t k = (size_t)n < size - 1 ? (size_t)n : size - 1;
        memcpy(out, buf, k);
        out[k] = '\0';
    }
    return n;
}
