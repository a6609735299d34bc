//! Chapter 14's data, derived from the pretrained model (`cargo xtask model
//! --data` runs this after fetching it): the files of
//! `attn::experiments::ch14_data::FILES` in `book/data/`, and the crate's
//! speed, `book/data/ch14-speed.tsv`, dated by `ATTN_MEASURED`.

use attn::experiments::ch14::{embeddings_per_second, model_dir, tokenize_all, Corpus};
use attn::experiments::ch14_data::{data_dir, derive, FILES};
use attn::pretrained::{Bert, WordPiece};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let model = model_dir();
    for (file, text) in FILES.iter().zip(derive(&model)?) {
        std::fs::write(data_dir().join(file), text)?;
        println!("wrote book/data/{file}");
    }
    let bert = Bert::load(&model)?;
    let corpus = Corpus::read()?;
    let tokens = tokenize_all(&WordPiece::load(&model)?, &corpus.sentences())?;
    let per_second = embeddings_per_second(&bert, &tokens, 10)?;
    let measured = std::env::var("ATTN_MEASURED").unwrap_or_else(|_| "(undated)".into());
    let text = format!(
        "# measured {measured}, by `cargo xtask model --data`: the {} corpus sentences \
         embedded one at a time, best of 10 passes\nimplementation\tsentences_per_second\n\
         attn\t{per_second:.1}\n",
        tokens.len()
    );
    std::fs::write(data_dir().join("ch14-speed.tsv"), text)?;
    println!("crate: {per_second:.1} sentence embeddings per second");
    Ok(())
}
