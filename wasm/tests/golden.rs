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
        all.push(case("saturation", json!({ "log2-dk": e, "log2-tau": t }), status));
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
        all.push(case("rope_score", json!({ "p-q": p_q, "p-k": p_k }), status));
    }
    all.push(case("keys", json!({}), abi::keys()));
    all.push(case("rope_curve", json!({}), abi::rope_curve()));
    all.extend(writer_cases());
    all.extend(digit_cases());
    // Chapter 21: n = 64 and 128, d = 4 and 16, causal and not.
    for (log2_n, d, causal) in [(6, 4, 0), (7, 16, 1)] {
        let status = abi::gpu_reference(log2_n, d, causal);
        let controls = json!({ "log2-n": log2_n, "d": d, "causal": causal });
        all.push(case("gpu_reference", controls, status));
    }
    all
}

/// Chapter 20: digits drawn on the grid (the first example, a stroke down
/// the middle, nothing at all) and a pixel past 16 (an error), each with
/// its probabilities and the last block's [CLS] attention.
fn digit_cases() -> Vec<Value> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../book/data/ch20-vit-weights.safetensors");
    abi::hand_over(&std::fs::read(path).unwrap());
    assert_eq!(abi::vit_load(), 0, "{}", abi::last_error());
    assert_eq!(abi::digit_example(0), 0, "{}", abi::last_error());
    let example: Vec<u8> = abi::last_output()[1..].iter().map(|&p| p as u8).collect();
    let stroke: Vec<u8> = (0..64).map(|i| if (3..5).contains(&(i % 8)) { 16 } else { 0 }).collect();
    let mut past = vec![0u8; 64];
    past[9] = 17;
    let mut all = Vec::new();
    for pixels in [example, stroke, vec![0; 64], past] {
        abi::hand_over(&pixels);
        let status = abi::vit_read();
        let shown: Vec<String> = pixels.iter().map(|p| p.to_string()).collect();
        all.push(case("vit_read", json!({ "pixels": shown.join(",") }), status));
    }
    all
}

/// Chapter 16's model, as the page loads it.
fn load_writer() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../book/data/ch16-weights.safetensors");
    abi::hand_over(&std::fs::read(path).unwrap());
    assert_eq!(abi::lm_load(), 0, "{}", abi::last_error());
}

/// Chapter 16: prompts written with several settings (the out is the whole
/// text, then each head's weights from its last character, block by block),
/// and a prompt with a character the model never saw.
fn writer_cases() -> Vec<Value> {
    load_writer();
    let mut all = Vec::new();
    let settings = [
        ("ROMEO:", 40, 0.8, 0, 1.0, 1),
        ("To be", 30, 0.0, 0, 1.0, 1),
        ("KING", 30, 1.0, 5, 0.9, 7),
        ("Café", 10, 1.0, 0, 1.0, 1),
    ];
    for (prompt, count, temperature, top_k, top_p, seed) in settings {
        abi::hand_over(prompt.as_bytes());
        let status = abi::lm_write(count, temperature, top_k, top_p, seed);
        let controls = json!({ "prompt": prompt, "count": count, "temperature": temperature, "top-k": top_k, "top-p": top_p, "seed": seed });
        if status != 0 {
            all.push(case("lm_write", controls, status));
            continue;
        }
        let text = abi::last_text();
        abi::hand_over(text.as_bytes());
        assert_eq!(abi::lm_attention(), 0, "{}", abi::last_error());
        let out = abi::last_output();
        let t = out[0] as usize;
        let last_rows: Vec<f64> =
            out[2..].chunks(t * t).flat_map(|w| w[(t - 1) * t..].to_vec()).collect();
        all.push(json!({ "export": "lm_write", "controls": controls, "status": 0, "text": text, "out": last_rows }));
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
    let kept: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap_or_default())
        .unwrap_or(Value::Null);
    let now: Value = serde_json::from_str(&text).unwrap();
    assert!(
        same(&kept, &now),
        "{path} differs from what the crate computes now: if the change is meant, \
         rerun with UPDATE_GOLDEN=1 and commit the file"
    );
}

/// Equal, numbers within `1e-5` relative: a processor with FMA takes other
/// roundings in the matrix products than one without (or than WebAssembly,
/// which the browser check compares with the same tolerance). Text, the
/// written characters included, must be equal.
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            let (x, y) = (x.as_f64().unwrap_or(f64::NAN), y.as_f64().unwrap_or(f64::NAN));
            (x - y).abs() <= 1e-5 * x.abs().max(1.0)
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
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
    assert!(largest(&unscaled) > 0.99 && largest(&scaled) < 0.9, "{unscaled:?} {scaled:?}");
    assert!(unscaled[16] < scaled[16], "the Jacobian's norm falls as the softmax saturates");

    // Chapter 6: padding of length 0 masks every key: zero weights, no NaN.
    assert_eq!(abi::masked_weights(4, 0, 2, 3), 0);
    let out = abi::last_output();
    assert!(out[2..14].iter().all(|&w| w == 0.0), "{out:?}");
    assert_eq!(out[14..], [1.0, 1.0], "both queries are named blind");
    assert_eq!(abi::masked_weights(1, 0, 3, 3), 0);
    let out = abi::last_output();
    assert_eq!(out[20..], [0.0, 0.0, 0.0]);
    let (keep, weights) = out[2..20].split_at(9);
    assert!(keep.iter().zip(weights).all(|(&k, &w)| k == 1.0 || w == 0.0));
    assert_eq!(abi::masked_weights(4, 6, 2, 4), 1);
    assert!(abi::last_error().contains("len"), "{}", abi::last_error());
    assert_eq!(abi::masked_weights(9, 0, 2, 4), 1);
    assert_eq!(abi::masked_weights(3, 2, 3, 5), 1, "a window is square");
    assert!(abi::last_error().starts_with("m "), "{}", abi::last_error());
    assert_eq!(abi::rope_score(64, 0), 1);
    assert!(abi::last_error().contains("query position"), "{}", abi::last_error());

    // Chapter 7: the same offset, the same score.
    assert_eq!(abi::rope_score(10, 3), 0);
    let a = abi::last_output()[0];
    assert_eq!(abi::rope_score(40, 33), 0);
    let b = abi::last_output()[0];
    assert!((a - b).abs() < 1e-4, "{a} {b}");
    assert_eq!(abi::rope_curve(), 0);
    assert_eq!(abi::last_output().len(), 127);

    // Chapter 16: the prompt comes back first, greedy writing is the same
    // every time, and each head's weights over the text sum to 1 a row.
    load_writer();
    abi::hand_over(b"ROMEO:");
    assert_eq!(abi::lm_write(30, 0.0, 0, 1.0, 1), 0);
    let first = abi::last_text();
    assert!(first.starts_with("ROMEO:") && first.len() == 36, "{first:?}");
    assert_eq!(abi::lm_write(30, 0.0, 0, 1.0, 2), 0);
    assert_eq!(abi::last_text(), first, "greedy ignores the seed");
    abi::hand_over(first.as_bytes());
    assert_eq!(abi::lm_attention(), 0);
    let out = abi::last_output();
    let t = out[0] as usize;
    assert_eq!(out.len(), 2 + 16 * t * t);
    assert_eq!(out[1], 0.0, "a text shorter than the context starts the window");
    for row in out[2..].chunks(t) {
        assert!((row.iter().sum::<f64>() - 1.0).abs() < 1e-5);
    }
    abi::hand_over(b"x");
    assert_eq!(abi::lm_write(401, 1.0, 0, 1.0, 1), 1);
    assert!(abi::last_error().contains("count"), "{}", abi::last_error());
}
