//! The numbers the browser check expects each widget to show, computed
//! natively through the same exports the page calls, and kept in
//! `wasm/golden/widgets.json`. The browser check sets each widget's
//! controls to a case's arguments and compares what the page shows, which
//! the WebAssembly build computed, with the case's `out`.
//!
//! `UPDATE_GOLDEN=1 cargo test -p attn-wasm` rewrites the file after a
//! deliberate change; the test fails whenever the crate's results move.

use attn_wasm::abi;
use serde_json::{json, Value};

/// One case: the export's name, its arguments as the widget's controls
/// hold them, and what the export returns for them.
fn case(name: &str, controls: Value, status: u32) -> Value {
    let out = match status {
        0 => json!(abi::last_output()),
        _ => json!(abi::last_error()),
    };
    json!({ "export": name, "controls": controls, "status": status, "out": out })
}

/// The cases: for each widget, settings a reader reaches with its controls,
/// an extreme or two, and one the crate refuses.
fn cases() -> Vec<Value> {
    let mut all = Vec::new();
    for (x, y) in [(0.0, 0.0), (1.5, 1.0), (-3.0, 3.0), (2.5, -2.5)] {
        let status = abi::query_among_keys(x, y);
        all.push(case("query_among_keys", json!({ "x": x, "y": y }), status));
    }
    // d_k = 2^e and τ = 2^t, as the sliders set them.
    for (e, t) in [(2, 1.0), (10, 0.0), (10, 5.0), (6, -2.0)] {
        let tau = 2f64.powf(t) as f32;
        let status = abi::saturation(1 << e, tau);
        all.push(case(
            "saturation",
            json!({ "log2-dk": e, "log2-tau": t }),
            status,
        ));
    }
    // kind, param, n, m: none, causal, bottom right, window, padding, and
    // padding longer than the keys (an error the widget shows).
    for (kind, param, n, m) in [
        (0, 0, 3, 5),
        (1, 0, 4, 6),
        (2, 0, 3, 6),
        (3, 2, 5, 5),
        (4, 0, 3, 4),
        (4, 3, 4, 5),
        (4, 6, 2, 4),
    ] {
        let status = abi::masked_weights(kind, param, n, m);
        let controls = json!({ "kind": kind, "param": param, "n": n, "m": m });
        all.push(case("masked_weights", controls, status));
    }
    for (p_q, p_k) in [(0, 0), (10, 3), (3, 10), (63, 56)] {
        let status = abi::rope_score(p_q, p_k);
        all.push(case(
            "rope_score",
            json!({ "p-q": p_q, "p-k": p_k }),
            status,
        ));
    }
    all
}

#[test]
fn the_widgets_golden_numbers_are_the_crates() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/golden/widgets.json");
    let text = serde_json::to_string_pretty(&json!({ "cases": cases() })).unwrap() + "\n";
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(path, &text).unwrap();
    }
    let kept = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        kept == text,
        "{path} differs from what the crate computes now: if the change is meant, \
         rerun with UPDATE_GOLDEN=1 and commit the file"
    );
}

/// What the widgets show is what their chapters say: weights sum to 1,
/// masked keys get 0, a fully masked row is zero, RoPE's score depends on
/// the offset alone, and bad settings are refused with a message.
#[test]
fn the_widgets_numbers_mean_what_the_chapters_say() {
    assert_eq!(abi::query_among_keys(1.5, 1.0), 0);
    let out = abi::last_output();
    assert!((out[..4].iter().sum::<f64>() - 1.0).abs() < 1e-6, "{out:?}");

    // Chapter 3: unscaled scores at d_k = 1024 saturate; scaled ones do not.
    assert_eq!(abi::saturation(1024, 1.0), 0);
    let unscaled = abi::last_output();
    assert_eq!(abi::saturation(1024, 32.0), 0);
    let scaled = abi::last_output();
    let largest = |o: &[f64]| o[..8].iter().copied().fold(0.0, f64::max);
    assert!(
        largest(&unscaled) > 0.99 && largest(&scaled) < 0.9,
        "{unscaled:?} {scaled:?}"
    );
    assert!(
        unscaled[16] < scaled[16],
        "the Jacobian's norm falls as the softmax saturates"
    );

    // Chapter 6: padding of length 0 masks every key: zero weights, no NaN.
    assert_eq!(abi::masked_weights(4, 0, 2, 3), 0);
    assert!(abi::last_output().iter().all(|&w| w == 0.0));
    assert_eq!(abi::masked_weights(1, 0, 3, 3), 0);
    let out = abi::last_output();
    let (keep, weights) = out.split_at(9);
    assert!(keep
        .iter()
        .zip(weights)
        .all(|(&k, &w)| k == 1.0 || w == 0.0));
    assert_eq!(abi::masked_weights(4, 6, 2, 4), 1);
    assert!(abi::last_error().contains("len"), "{}", abi::last_error());
    assert_eq!(abi::masked_weights(9, 0, 2, 4), 1);

    // Chapter 7: the same offset, the same score.
    assert_eq!(abi::rope_score(10, 3), 0);
    let a = abi::last_output()[0];
    assert_eq!(abi::rope_score(40, 33), 0);
    let b = abi::last_output()[0];
    assert!((a - b).abs() < 1e-4, "{a} {b}");
    assert_eq!(abi::rope_curve(), 0);
    assert_eq!(abi::last_output().len(), 127);
}
