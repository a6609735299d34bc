//! Chapter 8's parameters, shared by its example and its numbers test, and
//! what chapters 8 and 9 read about their measurements besides the figures:
//! the width and the processor a data file names.

/// The width of the cost model's table and of Figure 8.1: the original
/// Transformer's `d_model`.
pub const D_MODEL: u64 = 512;
/// The original Transformer's heads: the benchmarks' width `d` is one of
/// them, `D_MODEL / HEADS`.
pub const HEADS: u64 = 8;
/// The feed-forward network's width in units of `d_model`: `d_ff = 4d`.
pub const FF_RATIO: u64 = 4;
/// Exercise 1's width, a large model's `d_model`.
pub const EXERCISE_WIDTH: u64 = 4096;
/// The length at which the figures' dashed `n²` line passes through naive
/// attention's measured time (Figures 8.2 and 9.3).
pub const REFERENCE_LENGTH: u64 = 1024;

/// Figure 8.1's lengths: the powers of two from 64 to 65,536.
pub fn figure_lengths() -> Vec<u64> {
    (6..=16).map(|p| 1 << p).collect()
}

/// The width `d` a data file's header records (`…, d = 64: …`), if it
/// does.
pub fn width_in_header(line: &str) -> Option<u64> {
    let rest = line.split("d = ").nth(1)?;
    rest.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok()
}

/// The processor a data file's header names (`cpu: …`), as the chapters
/// name it: without trade marks and the word "Processor", so
/// `Intel(R) Xeon(R) Processor` is "Intel Xeon".
pub fn processor_name(cpu: &str) -> String {
    let plain = cpu.replace("(R)", "").replace("(TM)", "").replace("Processor", "");
    plain.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn processors_are_named_without_trade_marks() {
        assert_eq!(processor_name("Intel(R) Xeon(R) Processor"), "Intel Xeon");
        assert_eq!(processor_name("AMD EPYC"), "AMD EPYC");
    }

    #[test]
    fn a_header_s_width_is_read() {
        assert_eq!(width_in_header("statistic: peak; one thread, d = 64: the peak"), Some(64));
        assert_eq!(width_in_header("statistic: mean"), None);
    }
}
