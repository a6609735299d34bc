//! The handwritten digits' reader: images and ranges past the end, and
//! lines that are not an image.

use attn::vision::{Digits, PIXELS};
use attn::AttnError;

fn two_digits() -> Digits {
    let line = |label: u8| {
        let mut fields = vec!["1".to_string(); PIXELS];
        fields.push(label.to_string());
        fields.join(",")
    };
    Digits::parse(&format!("{}\n{}", line(3), line(4))).unwrap()
}

#[test]
fn an_image_past_the_end_is_named() {
    let digits = two_digits();
    let past =
        |e: AttnError| matches!(e, AttnError::OutOfRange { name: "image", value: 2, limit: 2, .. });
    assert!(past(digits.image(2).unwrap_err()));
    assert!(past(digits.label(2).unwrap_err()));
    let e = digits.class_counts(1..3).unwrap_err();
    assert!(matches!(e, AttnError::OutOfRange { name: "image", value: 3, limit: 2, .. }), "{e}");
    assert_eq!(digits.class_counts(0..2).unwrap()[3], 1);
}

#[test]
fn a_line_that_is_not_an_image_is_named() {
    let e = Digits::parse("1,2").unwrap_err();
    assert!(matches!(&e, AttnError::Dataset { reason, .. } if reason.contains("line 1")), "{e}");
    let e = Digits::read("/no/such/digits.csv").unwrap_err().to_string();
    assert!(e.contains("/no/such/digits.csv") && e.contains("cargo xtask digits"), "{e}");
}
