//! Chapter 18 quotes the output of `cargo run --example
//! ch18_longer_than_trained`, which computes RoPE's scaled frequencies and
//! reads the runs of `cargo xtask train long`; these tests recompute that
//! output and bind every number the chapter shows, section by section.

use attn::lm::{LanguageModel, SHAKESPEARE_MODEL};
use attn::rope_scaling::{RopeFrequencies, RopeScaling};
use report::ch18::{
    angles, angles_report, frequency_report, kept_and_divided, Scaled, D_K, FACTOR, LONGEST,
    TRAINED, YARN_BETAS,
};
use report::numbers::{Bindings, Evidence};

const CHAPTER: &str = "ch18-longer-than-trained.md";

#[test]
fn every_number_is_bound() {
    let mut b = Bindings::new(CHAPTER);
    introduction(&mut b);
    past_the_table(&mut b);
    angles_never_seen(&mut b);
    stretching(&mut b);
    runs(&mut b);
    exercises(&mut b);
    quiz(&mut b);
    b.assert_all_bound();
}

fn introduction(b: &mut Bindings) {
    b.section("Longer than trained");
    b.exact("64", TRAINED as f64).exact("64", TRAINED as f64).exact("64", TRAINED as f64);
}

fn past_the_table(b: &mut Bindings) {
    b.section("Past the end of the table");
    let learned = LanguageModel::<f32>::new(SHAKESPEARE_MODEL, 1).unwrap();
    assert!(learned.with_context(TRAINED + 1).is_err(), "no row for position 64");
    b.exact("64", TRAINED as f64).exact("64", TRAINED as f64);
}

fn angles_never_seen(b: &mut Bindings) {
    b.section("Angles never seen");
    b.exact("64", TRAINED as f64).exact("64", TRAINED as f64);
    b.exact("32", D_K as f64);
    assert_eq!(D_K, SHAKESPEARE_MODEL.d_model / SHAKESPEARE_MODEL.heads);
    b.exact("10000", base());
    b.quoted(&angles_report().unwrap());
    let a = angles().unwrap();
    assert!(a.slowest_longest > a.slowest_trained * 8.0, "the angle at 511 is new");
}

/// RoPE's base, from chapter 7's frequencies: `ω_1 = base^(−2/d)`.
fn base() -> f64 {
    let d = 32;
    let omega = attn::position::frequencies(d).unwrap();
    omega[1].powf(-(d as f64) / 2.0).round()
}

fn stretching(b: &mut Bindings) {
    b.section("Stretching RoPE");
    b.exact("10000", base());
    b.claim("divided by less the faster they turn", {
        let plain = RopeFrequencies::new(D_K, 10000.0, RopeScaling::None).unwrap();
        let ntk = RopeFrequencies::new(D_K, 10000.0, Scaled::NtkAware.scaling(FACTOR)).unwrap();
        let shares: Vec<f64> = ntk.omega().iter().zip(plain.omega()).map(|(n, p)| n / p).collect();
        shares.windows(2).all(|w| w[0] > w[1])
            && shares[0] == 1.0
            && (shares[shares.len() - 1] - 1.0 / FACTOR).abs() < 1e-12
    });
    let e = std::f64::consts::E;
    let yarn = RopeFrequencies::new(
        D_K,
        10000.0,
        RopeScaling::Yarn {
            factor: e,
            trained: TRAINED,
            beta_fast: YARN_BETAS.0,
            beta_slow: YARN_BETAS.1,
            temperature: true,
        },
    )
    .unwrap();
    b.value("0.1", yarn.attention_factor() - 1.0, 1e-12);
    b.exact(
        "1e-6",
        report::numbers::number_in_source(
            "tests/rope_scaling.rs",
            "scaled_frequencies_match_transformers",
            "<= ",
        ),
    );
    b.exact("8", FACTOR);
    b.exact("32", YARN_BETAS.0);
    b.claim("fewer than 32 times", {
        let plain = RopeFrequencies::new(D_K, 10000.0, RopeScaling::None).unwrap();
        let turns = TRAINED as f64 * plain.omega()[0] / (2.0 * std::f64::consts::PI);
        turns < YARN_BETAS.0
    });
    b.quoted(&frequency_report(FACTOR).unwrap());
    let (yarn_kept, yarn_divided) = kept_and_divided(Scaled::Yarn).unwrap();
    let (llama_kept, llama_divided) = kept_and_divided(Scaled::Llama3).unwrap();
    let never_turned = angles().unwrap().never_turned;
    assert_eq!((yarn_divided, llama_divided), (never_turned, never_turned));
    b.exact("64", TRAINED as f64);
    b.exact("1", yarn_kept as f64).exact("2", llama_kept as f64).exact("11", yarn_divided as f64);
    b.exact("11", never_turned as f64);
}

/// YaRN's factor on queries and keys for `factor`.
fn yarn_factor(factor: f64) -> f64 {
    let yarn = Scaled::Yarn.scaling(factor);
    RopeFrequencies::new(D_K, 10000.0, yarn).unwrap().attention_factor()
}

fn exercises(b: &mut Bindings) {
    b.section("Exercises");
    b.exact("8", FACTOR).exact("512", LONGEST as f64).exact("64", TRAINED as f64);
    let plain = RopeFrequencies::new(D_K, 10000.0, RopeScaling::None).unwrap();
    let pi = RopeFrequencies::new(D_K, 10000.0, Scaled::Interpolated.scaling(FACTOR)).unwrap();
    assert_eq!(plain.omega()[0], 1.0, "ω_0 = 1");
    b.exact("0.125", pi.omega()[0]);
    b.value("0.1", yarn_factor(std::f64::consts::E) - 1.0, 1e-12);
    b.rounded("1.208", yarn_factor(FACTOR)).rounded("1.459", yarn_factor(FACTOR).powi(2));
}

fn quiz(b: &mut Bindings) {
    b.section("Quiz");
    let learned = LanguageModel::<f32>::new(SHAKESPEARE_MODEL, 1).unwrap();
    assert!(learned.with_context(TRAINED + 1).is_err(), "no text longer than 64");
    b.exact("64", TRAINED as f64);
    b.exact("10000", base());
    b.value("0.1", yarn_factor(std::f64::consts::E) - 1.0, 1e-12);
}

fn runs(b: &mut Bindings) {
    use report::ch18::tables::{entropy_table, loss_table, passkey_distance_table, passkey_table};
    use report::ch18::tables::{rotary_reads, table_reads};
    use report::ch18::{CONTINUATION, CONTINUED, LONG_TEXTS, PASSKEY_LENGTHS};
    b.section("What the runs show");
    let (rows, source) = report::ch18::data::position_buckets().unwrap();
    let (found, passkey_source) = report::ch18::data::passkeys_found().unwrap();
    // The method.
    let chapter16 = attn::lm::SHAKESPEARE_TRAINING;
    b.exact("three", report::ch18::SEEDS.len() as f64);
    b.exact("64", TRAINED as f64).exact("16", LONG_TEXTS as f64).exact("512", LONGEST as f64);
    b.exact("8", FACTOR).exact("256", CONTINUED as f64).exact("4", (CONTINUED / TRAINED) as f64);
    b.exact("200", CONTINUATION.steps as f64).exact("3", CONTINUATION.batch as f64);
    b.exact("12", chapter16.batch as f64).exact("64", TRAINED as f64);
    b.claim(
        "as many characters a step as chapter\n16's 12 windows of 64",
        CONTINUATION.batch * CONTINUED == chapter16.batch * TRAINED,
    );
    b.value("1e-4", CONTINUATION.lr, 1e-12).value("1e-5", CONTINUATION.min_lr, 1e-12);
    b.claim("a tenth of\nchapter 16's peak", (10.0 * CONTINUATION.lr - chapter16.lr).abs() < 1e-12);
    b.exact("20", CONTINUATION.warmup as f64);
    b.exact("4", (CONTINUED / TRAINED) as f64).exact("512", LONGEST as f64);
    b.claim("twice their new length", LONGEST == 2 * CONTINUED);
    // The tables.
    b.from(&[&source]).quoted(&loss_table(&rows, "trained", &table_reads()));
    b.from(&[&source]).quoted(&loss_table(&rows, "continued", &rotary_reads()));
    b.from(&[&source]).quoted(&entropy_table(&rows, "trained", &table_reads()));
    b.from(&[&passkey_source]).quoted(&passkey_table(&found, &PASSKEY_LENGTHS));
    b.from(&[&passkey_source]).quoted(&passkey_distance_table(&found, LONGEST));
    let spans = Spans { rows: &rows };
    as_trained(b, &spans, &source);
    continued(b, &spans, &source);
    entropies(b, &spans, &source);
    temperature(b, &spans, &source);
    passkeys(b);
}

/// The chapter's data by span of positions.
struct Spans<'a> {
    rows: &'a [report::ch18::data::PositionBucket],
}

type Value = fn(&report::ch18::data::PositionBucket) -> f64;

impl Spans<'_> {
    /// Mean and range over the seeds.
    fn at(
        &self,
        stage: &str,
        read: &str,
        span: (usize, usize),
        value: Value,
    ) -> report::ch18::tables::Spread {
        report::ch18::tables::span(self.rows, (stage, read), span, value).unwrap()
    }
    /// The mean over the seeds.
    fn mean(&self, stage: &str, read: &str, span: (usize, usize), value: Value) -> f64 {
        self.at(stage, read, span, value).mean
    }
    /// Every seed's value on every span.
    fn runs(&self, stage: &str, read: &str, value: Value) -> Vec<f64> {
        let each = report::ch18::tables::SPANS.iter();
        each.flat_map(|&s| report::ch18::tables::per_seed(self.rows, (stage, read), s, value))
            .collect()
    }
    /// The mean rises from each span to the next.
    fn rising(&self, stage: &str, read: &str, value: Value) -> bool {
        let spans = report::ch18::tables::SPANS;
        spans
            .windows(2)
            .all(|w| self.mean(stage, read, w[0], value) < self.mean(stage, read, w[1], value))
    }
}

fn lowest(v: &[f64]) -> f64 {
    report::ch17::range(v).0
}

fn highest(v: &[f64]) -> f64 {
    report::ch17::range(v).1
}

const FIRST: (usize, usize) = report::ch18::tables::SPANS[0];
const LAST: (usize, usize) = report::ch18::tables::SPANS[3];

/// The rotary readings' labels.
fn rotary() -> Vec<&'static str> {
    report::ch18::ROTARY_READS.iter().map(|s| s.label()).collect()
}

fn as_trained(b: &mut Bindings, d: &Spans, source: &report::provenance::Provenance) {
    use report::ch18::tables::loss;
    let t = "trained";
    let mut p = b.from(&[source]);
    let alibi = d.runs(t, "alibi", loss);
    p.rounded("1.853", d.mean(t, "alibi", FIRST, loss))
        .rounded("1.832", d.mean(t, "alibi", LAST, loss))
        .rounded("1.826", lowest(&alibi))
        .rounded("1.884", highest(&alibi));
    p.claim(
        "ALiBi's loss does not climb at all",
        d.mean(t, "alibi", LAST, loss) <= d.mean(t, "alibi", FIRST, loss),
    );
    p.rounded("1.804", d.mean(t, "rope", FIRST, loss))
        .rounded("2.536", d.mean(t, "rope", LAST, loss))
        .rounded("2.081", d.mean(t, "none", FIRST, loss))
        .rounded("2.781", d.mean(t, "none", LAST, loss));
    p.claim("RoPE's climbs", d.rising(t, "rope", loss) && d.rising(t, "none", loss));
    p.claim(
        "every run without positions is behind\nevery RoPE run on every span",
        report::ch18::tables::SPANS
            .iter()
            .all(|&s| d.at(t, "none", s, loss).low > d.at(t, "rope", s, loss).high),
    );
    b.exact("256", LONGEST as f64 / 2.0).exact("511", (LONGEST - 1) as f64);
    // The scalings.
    let scalings: Vec<&str> = rotary().into_iter().filter(|r| *r != "rope").collect();
    let mut p = b.from(&[source]);
    p.rounded("3.467", d.mean(t, "pi", FIRST, loss));
    p.claim(
        "interpolation is worse everywhere",
        report::ch18::tables::SPANS.iter().all(|&s| {
            rotary().iter().all(|r| *r == "pi" || d.mean(t, r, s, loss) < d.mean(t, "pi", s, loss))
        }),
    );
    p.rounded("1.859", d.mean(t, "ntk", FIRST, loss));
    p.claim(
        "NTK-aware scaling costs least on the first 64\npositions",
        scalings.iter().all(|r| d.mean(t, r, FIRST, loss) >= d.mean(t, "ntk", FIRST, loss)),
    );
    p.rounded("2.535", d.mean(t, "ntk", LAST, loss))
        .rounded("2.536", d.mean(t, "rope", LAST, loss));
    p.claim(
        "gains nothing on positions 256 to 511",
        d.mean(t, "ntk", LAST, loss) > d.mean(t, "rope", LAST, loss) - 0.005,
    );
    p.rounded("1.973", d.mean(t, "yarn", FIRST, loss))
        .rounded("1.982", d.mean(t, "llama3", FIRST, loss));
    let climb = |r: &str| d.mean(t, r, LAST, loss) - d.mean(t, r, FIRST, loss);
    p.claim(
        "YaRN and Llama 3 trade the trained span for the long one",
        ["yarn", "llama3"].iter().all(|r| {
            d.mean(t, r, FIRST, loss) > d.mean(t, "rope", FIRST, loss)
                && d.mean(t, r, LAST, loss) < d.mean(t, "rope", LAST, loss)
                && climb(r) < climb("rope")
        }),
    );
    p.rounded("2.239", d.mean(t, "yarn", LAST, loss));
    p.claim(
        "every YaRN run below every run of RoPE and of the other three\nscalings there",
        rotary()
            .iter()
            .filter(|r| !r.starts_with("yarn"))
            .all(|r| d.at(t, r, LAST, loss).low > d.at(t, "yarn", LAST, loss).high)
            && rotary().iter().all(|r| d.mean(t, r, LAST, loss) >= d.mean(t, "yarn", LAST, loss)),
    );
    b.exact("64", TRAINED as f64).exact("64", TRAINED as f64).exact("64", TRAINED as f64);
    b.exact("256", LONGEST as f64 / 2.0).exact("511", (LONGEST - 1) as f64);
    b.exact("256", LONGEST as f64 / 2.0).exact("511", (LONGEST - 1) as f64);
}

fn continued(b: &mut Bindings, d: &Spans, source: &report::provenance::Provenance) {
    use report::ch18::tables::{loss, SPANS};
    use report::ch18::{CONTINUATION, CONTINUED};
    let c = "continued";
    let kept = ["rope", "ntk", "yarn", "llama3"];
    let early: Vec<f64> =
        kept.iter().flat_map(|r| SPANS[..3].iter().map(move |&s| d.mean(c, r, s, loss))).collect();
    let late: Vec<f64> = kept.iter().map(|r| d.mean(c, r, LAST, loss)).collect();
    b.exact("200", CONTINUATION.steps as f64).exact("256", CONTINUED as f64);
    let mut p = b.from(&[source]);
    p.rounded("1.788", lowest(&early)).rounded("1.835", highest(&early));
    p.rounded("1.925", lowest(&late)).rounded("2.005", highest(&late));
    p.claim(
        "the loss climbs again",
        kept.iter()
            .all(|r| SPANS[..3].iter().all(|&s| d.mean(c, r, s, loss) < d.mean(c, r, LAST, loss))),
    );
    let (s_lo, s_hi) = (lowest(&late[1..]), highest(&late[1..]));
    let rope = d.mean(c, "rope", LAST, loss);
    p.rounded("1.963", rope).claim("inside their range", s_lo <= rope && rope <= s_hi);
    p.rounded("1.925", s_lo).rounded("2.005", s_hi);
    p.rounded("3.467", d.mean("trained", "pi", FIRST, loss))
        .rounded("2.107", d.mean(c, "pi", FIRST, loss));
    p.claim(
        "stays behind\non every span",
        SPANS
            .iter()
            .all(|&s| kept.iter().all(|r| d.mean(c, r, s, loss) < d.mean(c, "pi", s, loss))),
    );
    b.exact("255", (CONTINUED - 1) as f64).exact("256", CONTINUED as f64);
    b.exact("256", CONTINUED as f64).exact("511", (LONGEST - 1) as f64).exact("64", TRAINED as f64);
}

fn entropies(b: &mut Bindings, d: &Spans, source: &report::provenance::Provenance) {
    use report::ch18::even_entropy;
    use report::ch18::tables::{entropy, loss, table_reads};
    let t = "trained";
    let reads: Vec<&str> = table_reads().iter().map(|r| r.0).filter(|r| *r != "learned").collect();
    let mut p = b.from(&[source]);
    p.claim(
        "Along the text every model spreads its attention over more keys",
        reads.iter().all(|r| d.rising(t, r, entropy)),
    );
    let none = d.mean(t, "none", LAST, entropy);
    p.rounded("2.10", d.mean(t, "none", FIRST, entropy)).rounded("5.01", none);
    p.value("150", none.exp(), 5.0);
    p.claim(
        "Without\npositions it spreads the most",
        reads.iter().all(|r| d.mean(t, r, LAST, entropy) <= none),
    );
    p.rounded("1.41", d.mean(t, "rope", FIRST, entropy))
        .rounded("3.52", d.mean(t, "rope", LAST, entropy));
    p.rounded("2.53", d.mean(t, "alibi", FIRST, entropy))
        .rounded("3.84", d.mean(t, "alibi", LAST, entropy));
    p.claim("ALiBi's entropy rises", d.rising(t, "alibi", entropy));
    p.claim(
        "while its loss stays flat",
        d.runs(t, "alibi", loss).iter().all(|l| (l - d.mean(t, "alibi", FIRST, loss)).abs() < 0.05),
    );
    b.rounded("5.93", even_entropy(LAST.0, LAST.1));
    b.exact("64", TRAINED as f64)
        .exact("256", LONGEST as f64 / 2.0)
        .exact("511", (LONGEST - 1) as f64);
}

/// What YaRN's temperature does, read by difference.
fn temperature(b: &mut Bindings, d: &Spans, source: &report::provenance::Provenance) {
    use report::ch18::data::passkeys_found;
    use report::ch18::tables::{entropy, loss, passkey_per_seed, per_seed};
    let t = "trained";
    let mut p = b.from(&[source]);
    let cold = d.mean(t, "yarn_cold", LAST, entropy);
    p.rounded("3.48", cold)
        .rounded("3.52", d.mean(t, "rope", LAST, entropy))
        .rounded("2.45", d.mean(t, "yarn", LAST, entropy));
    p.claim(
        "almost as much as RoPE's",
        cold < d.mean(t, "rope", LAST, entropy)
            && d.mean(t, "rope", LAST, entropy) - cold
                < 0.1 * (cold - d.mean(t, "yarn", LAST, entropy)),
    );
    p.rounded("2.319", d.mean(t, "yarn_cold", LAST, loss))
        .rounded("2.239", d.mean(t, "yarn", LAST, loss));
    let [hot, without] = ["yarn", "yarn_cold"].map(|r| per_seed(d.rows, (t, r), LAST, loss));
    let (found, passkeys) = passkeys_found().unwrap();
    let [hot_keys, cold_keys] =
        ["yarn", "yarn_cold"].map(|r| passkey_per_seed(&found, ("rope", r), LONGEST, None));
    b.from(&[&passkeys]).claim(
        "In each of the three runs the temperature lowers the loss there",
        hot.len() == 3
            && hot.iter().zip(&without).all(|(h, c)| h < c)
            && hot_keys.iter().zip(&cold_keys).all(|(h, c)| h > c),
    );
    b.exact("three", hot.len() as f64).exact("512", LONGEST as f64);
    let mean = |v: &[f64]| 100.0 * report::ch17::mean(v);
    let mut p = b.from(&[&passkeys]);
    p.rounded("34%", mean(&hot_keys)).rounded("10%", mean(&cold_keys));
    let mut p = b.from(&[source]);
    p.rounded("1.973", d.mean(t, "yarn", FIRST, loss))
        .rounded("1.951", d.mean(t, "yarn_cold", FIRST, loss));
    p.claim(
        "it costs a little",
        d.mean(t, "yarn", FIRST, loss) > d.mean(t, "yarn_cold", FIRST, loss),
    );
    b.exact("256", LONGEST as f64 / 2.0)
        .exact("511", (LONGEST - 1) as f64)
        .exact("64", TRAINED as f64);
}

/// The passkeys found.
fn passkeys(b: &mut Bindings) {
    use report::ch18::data::passkeys_found;
    use report::ch18::tables::{passkey_per_seed, passkey_reads};
    use report::ch18::{passkey_distances, PASSKEY_LENGTHS, PASSKEY_TEXTS};
    let (found, source) = passkeys_found().unwrap();
    let percent = |trained: &str, read: &str, len: usize, distance: Option<usize>| -> Vec<f64> {
        let each = passkey_per_seed(&found, (trained, read), len, distance);
        each.iter().map(|a| 100.0 * a).collect()
    };
    use report::ch17::mean;
    let at = |trained: &str, read: &str, len: usize| mean(&percent(trained, read, len, None));
    // The method: distances 8, 16, 32 and 8 short of each length.
    assert_eq!(attn::lm::KEY_DIGITS, 4, "a key of four digits");
    b.exact("64", TRAINED as f64);
    let distances = passkey_distances(LONGEST);
    assert_eq!(distances.len(), 7);
    for d in &distances[..3] {
        b.exact(&d.to_string(), *d as f64);
    }
    b.exact("8", (TRAINED - distances[3]) as f64);
    for d in &distances[3..] {
        b.exact(&d.to_string(), *d as f64);
    }
    b.exact("512", LONGEST as f64);
    b.exact("32", PASSKEY_TEXTS as f64).exact("64", TRAINED as f64);
    // The paragraph.
    let (short, long) = (TRAINED, LONGEST);
    let by = |trained: &str, read: &str, len: usize, distance: usize| {
        mean(&percent(trained, read, len, Some(distance)))
    };
    let mut p = b.from(&[&source]);
    p.claim(
        "At 64 characters every scaling is plain RoPE",
        rotary()
            .iter()
            .all(|r| percent("rope", r, short, None) == percent("rope", "rope", short, None)),
    );
    p.rounded("96%", at("rope", "rope", short))
        .rounded("78%", at("alibi", "alibi", short))
        .rounded("60%", at("none", "none", short));
    p.rounded("1%", by("rope", "rope", 2 * TRAINED, 8));
    p.claim(
        "plain RoPE loses them whatever the distance",
        passkey_distances(2 * TRAINED).iter().all(|&d| by("rope", "rope", 2 * TRAINED, d) < 50.0)
            && passkey_distances(TRAINED).contains(&8),
    );
    p.claim("none at 512", highest(&percent("rope", "rope", long, None)) == 0.0);
    let yarn = percent("rope", "yarn", long, None);
    p.rounded("34%", mean(&yarn)).rounded("21", lowest(&yarn)).rounded("46", highest(&yarn));
    p.claim(
        "YaRN keeps the most of the rotary readings",
        rotary().iter().all(|r| at("rope", r, long) <= mean(&yarn)),
    );
    let far = *passkey_distances(long).last().unwrap();
    p.rounded("48%", by("rope", "yarn", long, far));
    p.claim(
        "finds far keys as well as near ones",
        by("rope", "yarn", long, far) >= by("rope", "yarn", long, 8),
    );
    let alibi = percent("alibi", "alibi", long, None);
    p.rounded("36%", mean(&alibi)).rounded("16", lowest(&alibi)).rounded("48", highest(&alibi));
    p.claim(
        "ALiBi finds as many",
        lowest(&alibi) <= highest(&yarn) && lowest(&yarn) <= highest(&alibi),
    );
    p.rounded("53%", by("alibi", "alibi", long, 8));
    p.claim(
        "but near keys only",
        by("alibi", "alibi", long, far) == 0.0 && by("alibi", "alibi", long, 8) > 50.0,
    );
    let none: Vec<f64> =
        passkey_distances(long).iter().map(|&d| by("none", "none", long, d)).collect();
    p.rounded("21%", lowest(&none))
        .rounded("36%", highest(&none))
        .rounded("26%", at("none", "none", long));
    p.claim("about as\nmany at every distance", highest(&none) - lowest(&none) < 20.0);
    p.claim(
        "more than RoPE\nunder any scaling but YaRN",
        rotary()
            .iter()
            .filter(|r| **r != "yarn")
            .all(|r| at("rope", r, long) < at("none", "none", long)),
    );
    p.claim(
        "though it found fewest at 64",
        passkey_reads().iter().all(|&(t, r, _)| at(t, r, short) >= at("none", "none", short)),
    );
    p.claim(
        "on the passkey the model without\npositions does better than RoPE past 64",
        PASSKEY_LENGTHS[1..].iter().all(|&l| at("none", "none", l) > at("rope", "rope", l)),
    );
    b.learned(
        "YaRN keeps the most of the rotary readings",
        Evidence::Runs { values: &yarn, lowest: "21", highest: "46" },
    );
    let near = passkey_distances(long)[0] as f64;
    b.exact("128", 2.0 * TRAINED as f64).exact("8", near).exact("512", LONGEST as f64);
    b.exact("512", LONGEST as f64)
        .exact("504", far as f64)
        .exact("8", near)
        .exact("504", far as f64);
    b.exact("64", TRAINED as f64).exact("64", TRAINED as f64);
}
