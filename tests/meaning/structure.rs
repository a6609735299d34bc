//! The crate is built as the book teaches it: each idea implemented once,
//! and the library never depending on the exercises' solutions.

use std::path::Path;

use crate::common::book::rust_files;

/// The crate's source files other than the exercises and the chapters'
/// report helpers, with their text.
fn library() -> Vec<(String, String)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    rust_files(&src)
        .into_iter()
        .map(|p| {
            let name = p.strip_prefix(&src).unwrap().display().to_string();
            (name, std::fs::read_to_string(&p).unwrap())
        })
        .filter(|(name, _)| !name.starts_with("exercises/") && name != "lib.rs")
        .collect()
}

#[test]
fn the_library_does_not_use_the_exercises() {
    let offenders: Vec<String> = library()
        .into_iter()
        .filter(|(_, text)| text.contains("crate::exercises"))
        .map(|(name, _)| name)
        .collect();
    assert!(
        offenders.is_empty(),
        "these files use an exercise's solution; move what they need into the library: {offenders:?}"
    );
}

/// The scaled dot-product core (chapter 2's `attend`), the softmax, and the
/// layers every model is built from (the training stack, `src/nn/`) are
/// each defined once. (The tiled and fast kernels of chapter 9 and the
/// appendix are a named pair of their own, with their own online softmax.)
#[test]
fn each_layer_is_implemented_once() {
    let layers = [
        "fn attend",
        "fn softmax_in_place",
        "fn softmax_backward",
        "fn attention_forward",
        "fn attention_backward",
        "fn mha_forward",
        "fn mha_backward",
        "fn linear",
        "fn linear_backward",
        "struct PreNormBlock",
        "struct Decoder",
        "fn causal_mask",
        "fn key_padding_mask",
        "fn window_mask",
        "fn layer_norm_forward",
        "fn layer_norm_backward",
        "fn ffn_forward",
        "fn ffn_backward",
        "fn gelu",
        "fn gelu_erf",
        "fn embedding_forward",
        "fn embedding_backward",
        "fn cross_entropy",
        "fn log_softmax",
        "fn entropy",
        "struct Adam",
        "fn warmup_cosine",
        "trait Parameters",
        "fn write_checkpoint",
        "fn read_checkpoint",
    ];
    let files = library();
    for layer in layers {
        let defined: Vec<&str> = files
            .iter()
            .filter(|(_, text)| {
                // Items at the top of a module (methods, indented, may share a name).
                text.lines().any(|l| {
                    let l = l.strip_prefix("pub(crate) ").or(l.strip_prefix("pub ")).unwrap_or(l);
                    l.starts_with(&format!("{layer}("))
                        || l.starts_with(&format!("{layer}<"))
                        || l.starts_with(&format!("{layer} "))
                })
            })
            .map(|(name, _)| name.as_str())
            .collect();
        assert_eq!(defined.len(), 1, "`{layer}` is defined in {defined:?}");
    }
}

/// A mask is built by one constructor of `masking` (causal, key padding,
/// window and sinks): no other code of the library writes one out. The
/// tests' independent references may, and ALiBi's bias, which is not a
/// mask but a distance, is built where chapter 7 teaches it.
#[test]
fn masks_are_built_in_one_place() {
    let patterns = ["j <= i", "i - j <", "j < len"];
    let offenders: Vec<String> = library()
        .into_iter()
        .filter(|(name, _)| name != "masking.rs" && !name.ends_with("tests.rs"))
        .flat_map(|(name, text)| {
            let code = text.split("#[cfg(test)]").next().unwrap_or("").to_string();
            code.lines()
                .enumerate()
                .filter(|(_, l)| patterns.iter().any(|p| l.contains(p)))
                .filter(|(_, l)| !l.contains("if j <= i {")) // ALiBi's distance
                .map(|(i, l)| format!("{name}:{}: {}", i + 1, l.trim()))
                .collect::<Vec<_>>()
        })
        .collect();
    assert!(
        offenders.is_empty(),
        "masks written out beside masking's constructors: {offenders:#?}"
    );
}
