//! The functions the page calls. Every argument is a number, so nothing
//! crosses the boundary by pointer: each call leaves its results in one
//! buffer of `f64` (read by the page at [`out_ptr`], [`out_len`] long), or
//! of text ([`text_ptr`], [`text_len`] bytes of UTF-8), or, if the crate
//! refused the arguments, its error message (at [`error_ptr`],
//! [`error_len`] bytes), and returns 0 or 1. Bytes the page hands over (a
//! weights file, a prompt) go into a buffer this module allocates
//! ([`bytes_buffer`]), which the page fills; no `unsafe` anywhere.

use std::cell::RefCell;

use attn::error::AttnError;

use crate::widgets::{self, MaskKind};
use crate::writer::{Settings, Writer};

thread_local! {
    static OUT: RefCell<Vec<f64>> = const { RefCell::new(Vec::new()) };
    static TEXT: RefCell<String> = const { RefCell::new(String::new()) };
    static ERROR: RefCell<String> = const { RefCell::new(String::new()) };
    static BYTES: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
    static WRITER: RefCell<Option<Writer>> = const { RefCell::new(None) };
    static VIT: RefCell<Option<attn::vision::Vit<f32>>> = const { RefCell::new(None) };
}

/// Keeps a call's results (0 returned) or its error (1 returned).
fn answer(result: Result<Vec<f64>, AttnError>) -> u32 {
    match result {
        Ok(values) => {
            OUT.with(|out| *out.borrow_mut() = values);
            0
        }
        Err(e) => {
            ERROR.with(|error| *error.borrow_mut() = e.to_string());
            1
        }
    }
}

/// Where the last call's results start in the module's memory.
#[no_mangle]
pub extern "C" fn out_ptr() -> *const f64 {
    OUT.with(|out| out.borrow().as_ptr())
}

/// How many `f64` the last call left.
#[no_mangle]
pub extern "C" fn out_len() -> usize {
    OUT.with(|out| out.borrow().len())
}

/// Where the last call's text starts.
#[no_mangle]
pub extern "C" fn text_ptr() -> *const u8 {
    TEXT.with(|text| text.borrow().as_ptr())
}

/// The last call's text's length in bytes.
#[no_mangle]
pub extern "C" fn text_len() -> usize {
    TEXT.with(|text| text.borrow().len())
}

/// A buffer of `len` zero bytes for the page to fill (it writes there
/// before the next call that reads bytes).
#[no_mangle]
pub extern "C" fn bytes_buffer(len: usize) -> *mut u8 {
    BYTES.with(|bytes| {
        let mut bytes = bytes.borrow_mut();
        *bytes = vec![0; len];
        bytes.as_mut_ptr()
    })
}

/// Where the last error's message starts.
#[no_mangle]
pub extern "C" fn error_ptr() -> *const u8 {
    ERROR.with(|error| error.borrow().as_ptr())
}

/// The last error's length in bytes.
#[no_mangle]
pub extern "C" fn error_len() -> usize {
    ERROR.with(|error| error.borrow().len())
}

/// Chapter 2's keys, `[x₁, y₁, x₂, y₂, …]`.
#[no_mangle]
pub extern "C" fn keys() -> u32 {
    answer(Ok(widgets::KEYS.iter().flatten().map(|&c| f64::from(c)).collect()))
}

/// Chapter 2: the four weights, then the output's `x` and `y`.
#[no_mangle]
pub extern "C" fn query_among_keys(x: f32, y: f32) -> u32 {
    answer(
        widgets::query_among_keys([x, y]).map(|(weights, output)| {
            weights.iter().chain(&output).map(|&w| f64::from(w)).collect()
        }),
    )
}

/// Chapter 3: the weights, the scores, then the Jacobian's norm and the
/// largest weight.
#[no_mangle]
pub extern "C" fn saturation(d_k: u32, tau: f32) -> u32 {
    answer(widgets::saturation(d_k as usize, tau).map(|s| {
        let weights = s.weights.iter().chain(&s.scores).map(|&w| f64::from(w));
        let norms = [s.jacobian_norm, f64::from(s.largest)];
        weights.chain(norms).collect()
    }))
}

/// Chapter 6: `n`, `m`, the mask (1 kept, 0 dropped) and the weights,
/// `n×m` each row by row, then for each query 1 if every key is masked.
#[no_mangle]
pub extern "C" fn masked_weights(kind: u32, param: u32, n: u32, m: u32) -> u32 {
    let result = MaskKind::from_code(kind, param as usize)
        .and_then(|kind| widgets::masked_weights(kind, n as usize, m as usize));
    let flag = |b: &bool| f64::from(u8::from(*b));
    answer(result.map(|masked| {
        [f64::from(n), f64::from(m)]
            .into_iter()
            .chain(masked.keep.iter().map(flag))
            .chain(masked.weights.iter().map(|&w| f64::from(w)))
            .chain(masked.blind.iter().map(flag))
            .collect()
    }))
}

/// Chapter 7: the score and the offset, then the rotated query and key.
#[no_mangle]
pub extern "C" fn rope_score(p_q: u32, p_k: u32) -> u32 {
    answer(widgets::rope_score(p_q as usize, p_k as usize).map(|r| {
        let vectors = r.q.into_iter().chain(r.k).map(f64::from);
        [f64::from(r.score), r.offset as f64].into_iter().chain(vectors).collect()
    }))
}

/// Chapter 7: the score at every offset from `−63` to `63`.
#[no_mangle]
pub extern "C" fn rope_curve() -> u32 {
    answer(widgets::rope_curve().map(|c| c.into_iter().map(f64::from).collect()))
}

/// Chapter 21: the flash kernel's WGSL, as text.
#[no_mangle]
pub extern "C" fn gpu_kernel() -> u32 {
    TEXT.with(|text| *text.borrow_mut() = crate::gpu::KERNEL.to_string());
    answer(Ok(Vec::new()))
}

/// Chapter 21: `Q`, `K` and `V`, `n × d` each, row by row.
#[no_mangle]
pub extern "C" fn gpu_inputs(log2_n: u32, d: u32) -> u32 {
    answer(
        crate::gpu::inputs(log2_n, d as usize)
            .map(|x| x.iter().flat_map(|m| m.iter().map(|&v| f64::from(v))).collect()),
    )
}

/// Chapter 21: the crate's output, `n × d` row by row, then each query's
/// log-sum-exp.
#[no_mangle]
pub extern "C" fn gpu_reference(log2_n: u32, d: u32, causal: u32) -> u32 {
    answer(
        crate::gpu::reference(log2_n, d as usize, causal != 0)
            .map(|(output, lse)| output.iter().chain(&lse).map(|&v| f64::from(v)).collect()),
    )
}

/// The last call's results, for a native caller (the golden test) that
/// cannot read the module's memory as the page does.
pub fn last_output() -> Vec<f64> {
    OUT.with(|out| out.borrow().clone())
}

/// The last call's error message, for a native caller.
pub fn last_error() -> String {
    ERROR.with(|error| error.borrow().clone())
}

/// The bytes the page handed over, as text.
fn text_in() -> Result<String, AttnError> {
    BYTES.with(|bytes| {
        String::from_utf8(bytes.borrow().clone()).map_err(|e| AttnError::InvalidArgument {
            name: "text",
            value: e.utf8_error().valid_up_to() as f64,
            requirement: "must be UTF-8 (the page sends it so)",
        })
    })
}

/// Runs `f` on the loaded model, or says it is not loaded.
fn with_writer<T>(f: impl FnOnce(&Writer) -> Result<T, AttnError>) -> Result<T, AttnError> {
    WRITER.with(|writer| match writer.borrow().as_ref() {
        Some(w) => f(w),
        None => Err(AttnError::InvalidArgument {
            name: "model",
            value: 0.0,
            requirement: "must be loaded first (lm_load)",
        }),
    })
}

/// Chapter 20: reads the Vision Transformer from the bytes handed over (a
/// safetensors file). Leaves its patch size, heads and patches.
#[no_mangle]
pub extern "C" fn vit_load() -> u32 {
    let loaded = BYTES.with(|bytes| attn::vision::Vit::from_safetensors(&bytes.borrow()));
    answer(loaded.map(|model| {
        let c = model.config();
        VIT.with(|v| *v.borrow_mut() = Some(model));
        vec![c.patch as f64, c.heads as f64, c.patches() as f64]
    }))
}

/// Chapter 20: the 64 pixels handed over (bytes, 0 to 16) read by the
/// loaded ViT: the ten probabilities, then each head's `[CLS]` attention
/// over the patches in the last block.
#[no_mangle]
pub extern "C" fn vit_read() -> u32 {
    let pixels = BYTES.with(|bytes| bytes.borrow().clone());
    answer(VIT.with(|v| match v.borrow().as_ref() {
        Some(model) => {
            widgets::read_digit(model, &pixels).map(|r| {
                r.probabilities.iter().chain(&r.attention).map(|&x| f64::from(x)).collect()
            })
        }
        None => Err(AttnError::InvalidArgument {
            name: "model",
            value: 0.0,
            requirement: "must be loaded first (vit_load)",
        }),
    }))
}

/// Chapter 20: example digit `i`, its label, then its 64 pixels.
#[no_mangle]
pub extern "C" fn digit_example(i: u32) -> u32 {
    answer(widgets::example_digit(i as usize).map(|d| d.into_iter().map(f64::from).collect()))
}

/// Chapter 16: reads the model from the bytes handed over (a safetensors
/// file). Leaves its blocks and heads.
#[no_mangle]
pub extern "C" fn lm_load() -> u32 {
    let loaded = BYTES.with(|bytes| Writer::from_safetensors(&bytes.borrow()));
    answer(loaded.map(|writer| {
        let (blocks, heads) = writer.shape();
        WRITER.with(|w| *w.borrow_mut() = Some(writer));
        vec![blocks as f64, heads as f64]
    }))
}

/// Chapter 16: the prompt handed over and `count` characters the model
/// writes after it, as text.
#[no_mangle]
pub extern "C" fn lm_write(count: u32, temperature: f64, top_k: u32, top_p: f64, seed: u32) -> u32 {
    let settings = Settings {
        count: count as usize,
        temperature,
        top_k: top_k as usize,
        top_p,
        seed: u64::from(seed),
    };
    let written = text_in().and_then(|prompt| with_writer(|w| w.write(&prompt, settings)));
    match written {
        Ok(text) => {
            TEXT.with(|t| *t.borrow_mut() = text);
            answer(Ok(Vec::new()))
        }
        Err(e) => answer(Err(e)),
    }
}

/// Chapter 16: every head's attention over the text handed over (its last
/// `context` characters): `T`, where in the text they start, then each
/// block's heads' `T×T` weights.
#[no_mangle]
pub extern "C" fn lm_attention() -> u32 {
    let result = text_in().and_then(|text| with_writer(|w| w.attention(&text)));
    answer(result.map(|(t, start, weights)| {
        let weights = weights.into_iter().map(f64::from);
        [t as f64, start as f64].into_iter().chain(weights).collect()
    }))
}

/// The text the last call left, for a native caller.
pub fn last_text() -> String {
    TEXT.with(|text| text.borrow().clone())
}

/// Hands `bytes` over as the page does, for a native caller.
pub fn hand_over(bytes: &[u8]) {
    BYTES.with(|b| *b.borrow_mut() = bytes.to_vec());
}
