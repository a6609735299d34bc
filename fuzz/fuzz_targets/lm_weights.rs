//! The language model's weights reader, on any bytes and on a small model's
//! file damaged as files are damaged (truncated, a tensor of another dtype
//! or shape, a NaN or an infinity among the numbers, its sizes edited), and
//! the corpus reader on any text: an error or a valid result, never a
//! panic. The first byte chooses: even, the rest is read as it is; odd, the
//! rest says how to damage the small model's file (`cargo xtask fuzz`
//! seeds both).
#![no_main]

use std::sync::OnceLock;

use attn::lm::{Corpus, LanguageModel, LmConfig, Positions, SHAKESPEARE_MODEL};
use attn::nn::Parameters;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    match data.split_first() {
        Some((&mode, rest)) if mode % 2 == 1 => damaged(rest),
        Some((_, rest)) => any_bytes(rest),
        None => {}
    }
});

/// Any bytes: a model whose every number is finite, or an error; any text:
/// a corpus that splits it, or an error.
fn any_bytes(data: &[u8]) {
    if let Ok(model) = LanguageModel::from_safetensors(data) {
        assert!(finite(&model));
    }
    if let Ok(corpus) = Corpus::from_text(data) {
        assert_eq!(corpus.train().len() + corpus.validation().len(), data.len());
        let ids: Vec<usize> = corpus.train().iter().map(|&i| usize::from(i)).collect();
        let text = corpus.vocab().decode(&ids).expect("ids of the vocabulary");
        assert_eq!(text.as_bytes(), &data[..ids.len()]);
    }
}

fn finite(model: &LanguageModel<f32>) -> bool {
    model.slices().iter().all(|s| s.iter().all(|x| x.is_finite()))
}

/// A small model with rotary positions and its file.
fn small() -> &'static (LanguageModel<f32>, Vec<u8>) {
    static SMALL: OnceLock<(LanguageModel<f32>, Vec<u8>)> = OnceLock::new();
    SMALL.get_or_init(|| {
        let config = LmConfig {
            vocab: 6,
            context: 4,
            d_model: 8,
            heads: 2,
            kv_heads: 1,
            layers: 2,
            d_ff: 16,
            positions: Positions::Rotary,
            ..SHAKESPEARE_MODEL
        };
        let model = LanguageModel::new(config, 3).expect("a small model");
        let file = model.to_safetensors("# fuzzed").expect("its file");
        (model, file)
    })
}

/// A file's header (JSON) and its tensors' bytes.
fn split(file: &[u8]) -> (String, &[u8]) {
    let n = u64::from_le_bytes(file[..8].try_into().unwrap()) as usize;
    (String::from_utf8(file[8..8 + n].to_vec()).unwrap(), &file[8 + n..])
}

/// A file from a header and tensors' bytes.
fn join(header: &str, data: &[u8]) -> Vec<u8> {
    let mut file = (header.len() as u64).to_le_bytes().to_vec();
    file.extend(header.as_bytes());
    file.extend(data);
    file
}

/// The `k`-th match of `pattern` in `text` (counting round), if any.
fn nth_match(text: &str, pattern: &str, k: usize) -> Option<usize> {
    let all: Vec<usize> = text.match_indices(pattern).map(|(i, _)| i).collect();
    (!all.is_empty()).then(|| all[k % all.len()])
}

/// The small model's file damaged as `how` says; the reader must refuse
/// every damage that changes what the file means, and may read the others
/// only as the model they still are.
fn damaged(how: &[u8]) {
    let (model, file) = small();
    let byte = |i: usize| how.get(i).copied().unwrap_or(0);
    let number = u32::from_le_bytes([byte(1), byte(2), byte(3), byte(4)]) as usize;
    let (header, data) = split(file);
    let read = |bytes: &[u8]| LanguageModel::from_safetensors(bytes);
    match byte(0) % 6 {
        // Truncated anywhere: an error.
        0 => assert!(read(&file[..number % file.len()]).is_err()),
        // A NaN or an infinity among the numbers: an error.
        1 => {
            let bad = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY][usize::from(byte(5)) % 3];
            let mut data = data.to_vec();
            let at = number % (data.len() / 4) * 4;
            data[at..at + 4].copy_from_slice(&bad.to_le_bytes());
            assert!(read(&join(&header, &data)).is_err(), "{bad} at byte {at}");
        }
        // A tensor of another dtype (its bytes unchanged): an error.
        2 => {
            let Some(at) = nth_match(&header, "\"F32\"", number) else { return };
            let dtype = ["\"F16\"", "\"I32\"", "\"F64\"", "\"U32\""][usize::from(byte(5)) % 4];
            let header = format!("{}{dtype}{}", &header[..at], &header[at + 5..]);
            assert!(read(&join(&header, data)).is_err(), "{dtype}");
        }
        // A tensor of another shape: an error unless the shape is the same.
        3 => {
            let Some(at) = nth_match(&header, "\"shape\":[", number) else { return };
            let start = at + "\"shape\":[".len();
            let end = start + header[start..].find(']').unwrap();
            let shape = [byte(5), byte(6)]
                .iter()
                .take(1 + usize::from(byte(7)) % 2)
                .map(|b| b.to_string())
                .collect::<Vec<_>>()
                .join(",");
            let same = header[start..end] == shape;
            let header = format!("{}{shape}{}", &header[..start], &header[end..]);
            match read(&join(&header, data)) {
                Ok(read) => assert!(same && read == *model, "shape [{shape}] read"),
                Err(_) => assert!(!same, "the same shape [{shape}] refused"),
            }
        }
        // A size in the metadata edited: an error, or a model whose every
        // number is finite.
        4 => {
            let Some(at) = nth_match(&header, "\":\"", number) else { return };
            let start = at + 3;
            let end = start + header[start..].find('"').unwrap();
            let value: String =
                how.iter().skip(5).take(20).map(|&b| char::from(b'0' + b % 10)).collect();
            let header = format!("{}{value}{}", &header[..start], &header[end..]);
            if let Ok(read) = read(&join(&header, data)) {
                assert!(finite(&read));
            }
        }
        // Any byte changed: an error, or a model whose every number is
        // finite.
        _ => {
            let mut file = file.clone();
            let at = number % file.len();
            file[at] ^= byte(5).max(1);
            if let Ok(read) = read(&file) {
                assert!(finite(&read));
            }
        }
    }
}
