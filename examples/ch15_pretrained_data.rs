//! Chapter 15's data, derived from the pretrained model (`cargo xtask model
//! --data` runs this after fetching it): the files of
//! `report::ch15_data::FILES` in `book/data/`, and the crate's
//! speed, `book/data/ch15-speed.tsv`, each headed by the run
//! (`ATTN_RUN_HEADER`).

use attn::pretrained::{Bert, WordPiece};
use report::ch15::{embeddings_per_second, model_dir, tokenize_all, Corpus};
use report::ch15_data::{data_dir, derive, FILES};
use report::provenance::header;

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
    let text = format!(
        "{}\nimplementation\tsentences_per_second\nattn\t{per_second:.1}\n",
        header(
            "best of 10",
            &format!(
                "one thread, by `cargo xtask model --data`: the {} corpus sentences \
                 embedded one at a time, the best of 10 passes",
                tokens.len()
            )
        )
    );
    std::fs::write(data_dir().join("ch15-speed.tsv"), text)?;
    println!("crate: {per_second:.1} sentence embeddings per second");
    Ok(())
}
