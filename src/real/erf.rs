//! The error function of many `f32`s at once, eight to an AVX2 register,
//! with the bits of `libm::erff`, the function [`Real::erf`] computes one
//! number with: the exact GELU of a language model's feed-forward layers
//! calls it for every hidden unit, forward and backward, and one number at
//! a time it was a tenth of chapter 16's training step (profiled on one
//! thread of an AMD EPYC, Zen 3).
//!
//! `libm::erff` (FreeBSD's `s_erff.c`) picks one of five formulas by the
//! size of `|x|`: rational functions below 0.84375 and below 1.25, and
//! `e^(−x²)` times a rational function of `1/x²` (two of them, split at
//! `1/0.35`) below 6, where `erf` rounds to 1. Here every formula a register
//! needs is computed for all its lanes, with the same operations in the same
//! order (no multiply-add fused: Rust never fuses them either), and each lane
//! keeps its own; `e^x` is `libm::expf`'s, written the same way. Each such
//! operation rounds as its scalar twin does, so each lane gets `erff`'s bits.
//! A register holding an infinity or a NaN is left to `erff` itself.
//!
//! [`Real::erf`]: super::Real::erf

/// Replaces each number of `x` by its error function, bit for bit
/// `libm::erff`, eight at a time where the processor has AVX2.
pub(crate) fn erf_in_place(x: &mut [f32]) {
    let mut done = 0;
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        done = x.len() / 8 * 8;
        for chunk in x[..done].chunks_exact_mut(8) {
            // SAFETY: the processor runs AVX2 (checked above); the chunk
            // holds 8 numbers.
            unsafe { avx2::erf8(chunk) };
        }
    }
    for x in &mut x[done..] {
        *x = libm::erff(*x);
    }
}

// The constants as FreeBSD and libm write them, digits past f32's included.
#[allow(clippy::excessive_precision)]
#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    // erff's constants (FreeBSD's s_erff.c, as libm 0.2 writes them).
    const ERX: f32 = 8.4506291151e-01;
    const EFX8: f32 = 1.0270333290e+00;
    const PP: [f32; 5] = [
        1.2837916613e-01,
        -3.2504209876e-01,
        -2.8481749818e-02,
        -5.7702702470e-03,
        -2.3763017452e-05,
    ];
    const QQ: [f32; 5] =
        [3.9791721106e-01, 6.5022252500e-02, 5.0813062117e-03, 1.3249473704e-04, -3.9602282413e-06];
    const PA: [f32; 7] = [
        -2.3621185683e-03,
        4.1485610604e-01,
        -3.7220788002e-01,
        3.1834661961e-01,
        -1.1089469492e-01,
        3.5478305072e-02,
        -2.1663755178e-03,
    ];
    const QA: [f32; 6] = [
        1.0642088205e-01,
        5.4039794207e-01,
        7.1828655899e-02,
        1.2617121637e-01,
        1.3637083583e-02,
        1.1984500103e-02,
    ];
    const RA: [f32; 8] = [
        -9.8649440333e-03,
        -6.9385856390e-01,
        -1.0558626175e+01,
        -6.2375331879e+01,
        -1.6239666748e+02,
        -1.8460508728e+02,
        -8.1287437439e+01,
        -9.8143291473e+00,
    ];
    const SA: [f32; 8] = [
        1.9651271820e+01,
        1.3765776062e+02,
        4.3456588745e+02,
        6.4538726807e+02,
        4.2900814819e+02,
        1.0863500214e+02,
        6.5702495575e+00,
        -6.0424413532e-02,
    ];
    const RB: [f32; 7] = [
        -9.8649431020e-03,
        -7.9928326607e-01,
        -1.7757955551e+01,
        -1.6063638306e+02,
        -6.3756646729e+02,
        -1.0250950928e+03,
        -4.8351919556e+02,
    ];
    const SB: [f32; 7] = [
        3.0338060379e+01,
        3.2579251099e+02,
        1.5367296143e+03,
        3.1998581543e+03,
        2.5530502930e+03,
        4.7452853394e+02,
        -2.2440952301e+01,
    ];

    // expf's (FreeBSD's e_expf.c).
    const LN2_HI: f32 = 6.9314575195e-01;
    const LN2_LO: f32 = 1.4286067653e-06;
    const INV_LN2: f32 = 1.4426950216e+00;
    const P1: f32 = 1.6666625440e-1;
    const P2: f32 = -2.7667332906e-3;

    /// `c[0] + s·(c[1] + s·(… + s·c[n−1]))`, innermost first, as erff
    /// writes its polynomials.
    #[inline(always)]
    unsafe fn horner(s: __m256, c: &[f32]) -> __m256 {
        let (last, rest) = c.split_last().expect("a polynomial has a coefficient");
        let mut p = _mm256_set1_ps(*last);
        for &c in rest.iter().rev() {
            p = _mm256_add_ps(_mm256_set1_ps(c), _mm256_mul_ps(s, p));
        }
        p
    }

    /// `1 + s·(c[0] + s·(c[1] + …))`: erff's denominators.
    #[inline(always)]
    unsafe fn one_plus(s: __m256, c: &[f32]) -> __m256 {
        _mm256_add_ps(_mm256_set1_ps(1.0), _mm256_mul_ps(s, horner(s, c)))
    }

    /// Lanes where `a < b`, comparing the bits of non-negative floats.
    #[inline(always)]
    unsafe fn below(a: __m256i, b: u32) -> __m256i {
        _mm256_cmpgt_epi32(_mm256_set1_epi32(b as i32), a)
    }

    /// `if mask { yes } else { no }`, lane by lane.
    #[inline(always)]
    unsafe fn pick(mask: __m256i, yes: __m256, no: __m256) -> __m256 {
        _mm256_blendv_ps(no, yes, _mm256_castsi256_ps(mask))
    }

    /// `libm::expf(x)` for `|x| < 87` (where it neither overflows nor
    /// underflows), lane by lane, with its argument reduction and
    /// polynomial.
    #[target_feature(enable = "avx2")]
    unsafe fn expf8(x: __m256) -> __m256 {
        let bits = _mm256_castps_si256(x);
        let hx = _mm256_and_si256(bits, _mm256_set1_epi32(0x7fff_ffff));
        let negative = _mm256_srai_epi32(bits, 31); // all ones where x < 0
                                                    // k: round(x/ln 2) above 1.5 ln 2, ±1 above 0.5 ln 2, else 0.
        let half = pick(negative, _mm256_set1_ps(-0.5), _mm256_set1_ps(0.5));
        let far =
            _mm256_cvttps_epi32(_mm256_add_ps(_mm256_mul_ps(_mm256_set1_ps(INV_LN2), x), half));
        let one = _mm256_or_si256(negative, _mm256_set1_epi32(1)); // 1 − 2·sign
        let k =
            _mm256_blendv_epi8(one, far, _mm256_cmpgt_epi32(hx, _mm256_set1_epi32(0x3f85_1592)));
        let k = _mm256_and_si256(k, _mm256_cmpgt_epi32(hx, _mm256_set1_epi32(0x3eb1_7218)));
        let kf = _mm256_cvtepi32_ps(k);
        // With k = 0 these give hi = x and lo = 0, as erff's k = 0 branch.
        let hi = _mm256_sub_ps(x, _mm256_mul_ps(kf, _mm256_set1_ps(LN2_HI)));
        let lo = _mm256_mul_ps(kf, _mm256_set1_ps(LN2_LO));
        let r = _mm256_sub_ps(hi, lo);
        let rr = _mm256_mul_ps(r, r);
        let poly = _mm256_add_ps(_mm256_set1_ps(P1), _mm256_mul_ps(rr, _mm256_set1_ps(P2)));
        let c = _mm256_sub_ps(r, _mm256_mul_ps(rr, poly));
        let ratio = _mm256_div_ps(_mm256_mul_ps(r, c), _mm256_sub_ps(_mm256_set1_ps(2.0), c));
        let y = _mm256_add_ps(_mm256_set1_ps(1.0), _mm256_add_ps(_mm256_sub_ps(ratio, lo), hi));
        // y·2^k, exact (2^k is a normal number for these k).
        let scale = _mm256_slli_epi32(_mm256_add_epi32(k, _mm256_set1_epi32(127)), 23);
        let y = _mm256_mul_ps(y, _mm256_castsi256_ps(scale));
        // Below 2⁻¹⁴, expf returns 1 + x.
        let tiny = below(hx, 0x3900_0001);
        pick(tiny, _mm256_add_ps(_mm256_set1_ps(1.0), x), y)
    }

    /// Replaces 8 numbers `x` by `libm::erff` of each.
    ///
    /// # Safety
    /// The processor must run AVX2; `x` must hold 8 numbers.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn erf8(x: &mut [f32]) {
        assert!(x.len() == 8);
        let v = _mm256_loadu_ps(x.as_ptr());
        let bits = _mm256_castps_si256(v);
        let ix = _mm256_and_si256(bits, _mm256_set1_epi32(0x7fff_ffff));
        if _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpgt_epi32(
            ix,
            _mm256_set1_epi32(0x7f7f_ffff),
        ))) != 0
        {
            // An infinity or a NaN: erff's own special case.
            for x in x {
                *x = libm::erff(*x);
            }
            return;
        }
        let ax = _mm256_castsi256_ps(ix); // |x|: erf is odd, and erff's branches are too
        let sign = _mm256_andnot_si256(_mm256_set1_epi32(0x7fff_ffff), bits);
        let any = |mask: __m256i| _mm256_movemask_ps(_mm256_castsi256_ps(mask)) != 0;
        let one = _mm256_set1_ps(1.0);
        // |x| ≥ 6: 1 − 2⁻¹²⁰, which rounds to 1.
        let mut y = _mm256_set1_ps(1.0 - f32::from_bits(0x0380_0000));
        let below_6 = below(ix, 0x40c0_0000);
        let below_1_25 = below(ix, 0x3fa0_0000);
        let below_0_84 = below(ix, 0x3f58_0000);
        if any(_mm256_andnot_si256(below_1_25, below_6)) {
            // 1.25 ≤ |x| < 6: 1 − e^(−z² − 0.5625) e^((z − x)(z + x) + R/S) / x,
            // with z = x cut to its first 12 bits of mantissa.
            let s = _mm256_div_ps(one, _mm256_mul_ps(ax, ax));
            let near = below(ix, 0x4036_db6d); // |x| < 1/0.35
            let (mut r, mut big_s) = (_mm256_setzero_ps(), _mm256_setzero_ps());
            if any(near) {
                r = horner(s, &RA);
                big_s = one_plus(s, &SA);
            }
            if any(_mm256_andnot_si256(near, below_6)) {
                r = pick(near, r, horner(s, &RB));
                big_s = pick(near, big_s, one_plus(s, &SB));
            }
            let z = _mm256_castsi256_ps(_mm256_and_si256(
                ix,
                _mm256_set1_epi32(0xffff_e000_u32 as i32),
            ));
            let minus_z = _mm256_xor_ps(z, _mm256_set1_ps(-0.0));
            let first = expf8(_mm256_sub_ps(_mm256_mul_ps(minus_z, z), _mm256_set1_ps(0.5625)));
            let cross = _mm256_mul_ps(_mm256_sub_ps(z, ax), _mm256_add_ps(z, ax));
            let second = expf8(_mm256_add_ps(cross, _mm256_div_ps(r, big_s)));
            let erfc = _mm256_div_ps(_mm256_mul_ps(first, second), ax);
            y = pick(below_6, _mm256_sub_ps(one, erfc), y);
        }
        if any(_mm256_andnot_si256(below_0_84, below_1_25)) {
            // 0.84375 ≤ |x| < 1.25: 1 − (1 − erx − P(s)/Q(s)), s = |x| − 1.
            let s = _mm256_sub_ps(ax, one);
            let p = horner(s, &PA);
            let q = one_plus(s, &QA);
            let erfc = _mm256_sub_ps(_mm256_set1_ps(1.0 - ERX), _mm256_div_ps(p, q));
            y = pick(below_1_25, _mm256_sub_ps(one, erfc), y);
        }
        if any(below_0_84) {
            // |x| < 0.84375: x + x·R(x²)/S(x²), and below 2⁻²⁸ x·(1 + efx).
            let z = _mm256_mul_ps(ax, ax);
            let ratio = _mm256_div_ps(horner(z, &PP), one_plus(z, &QQ));
            let small = _mm256_add_ps(ax, _mm256_mul_ps(ax, ratio));
            let eight = _mm256_mul_ps(_mm256_set1_ps(8.0), ax);
            let tiny = _mm256_mul_ps(
                _mm256_set1_ps(0.125),
                _mm256_add_ps(eight, _mm256_mul_ps(_mm256_set1_ps(EFX8), ax)),
            );
            let small = pick(below(ix, 0x3180_0000), tiny, small);
            y = pick(below_0_84, small, y);
        }
        let y = _mm256_or_ps(y, _mm256_castsi256_ps(sign));
        _mm256_storeu_ps(x.as_mut_ptr(), y);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every lane's bits equal `libm::erff`'s (a NaN for a NaN).
    fn assert_erff_bits(xs: &[f32]) {
        let mut got = xs.to_vec();
        erf_in_place(&mut got);
        for (&x, &g) in xs.iter().zip(&got) {
            let want = libm::erff(x);
            let same = g.to_bits() == want.to_bits() || (g.is_nan() && want.is_nan());
            assert!(
                same,
                "erf({x:e}) = {want:e} ({:#x}), got {g:e} ({:#x})",
                want.to_bits(),
                g.to_bits()
            );
        }
    }

    /// Each branch's threshold of erff (and of the expf inside it), a
    /// thousand numbers either side of it, both signs.
    #[test]
    fn has_erff_s_bits_at_every_branch_boundary() {
        let edges =
            [0x3180_0000_u32, 0x3f58_0000, 0x3fa0_0000, 0x4036_db6d, 0x40c0_0000, 0x7f80_0000];
        let mut xs = Vec::new();
        for edge in edges {
            for bits in edge - 1000..edge + 1000 {
                xs.extend([f32::from_bits(bits), -f32::from_bits(bits)]);
            }
        }
        xs.extend([
            0.0,
            -0.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            f32::MIN_POSITIVE,
            f32::MAX,
        ]);
        assert_erff_bits(&xs);
    }

    /// Every 4,099th bit pattern of all 2³²: every size of number, both
    /// signs, the NaNs, in registers that mix the branches.
    #[test]
    fn has_erff_s_bits_across_all_floats() {
        let xs: Vec<f32> = (0..=u32::MAX).step_by(4099).map(f32::from_bits).collect();
        assert_erff_bits(&xs);
    }

    /// Every float in [−7, 7] a GELU meets, a million of them evenly spread
    /// in value, eight lanes at a time, and a length that leaves a tail.
    #[test]
    fn has_erff_s_bits_where_a_gelu_reads_it() {
        let xs: Vec<f32> = (0..1_000_003).map(|i| -7.0 + 14.0 * (i as f32) / 1e6).collect();
        assert_erff_bits(&xs);
    }

    /// All 2³² floats; about a minute in a release build:
    /// `cargo test --release --lib erf -- --ignored`.
    #[test]
    #[ignore]
    fn has_erff_s_bits_for_every_float() {
        let all: Vec<u32> = (0..=u32::MAX).collect();
        for chunk in all.chunks(1 << 24) {
            let xs: Vec<f32> = chunk.iter().map(|&b| f32::from_bits(b)).collect();
            assert_erff_bits(&xs);
        }
    }
}
