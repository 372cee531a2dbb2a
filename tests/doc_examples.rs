//! The command examples of the README and the book run as tests, with their output checked:
//! every ```` ```console ```` block is a trycmd case (`$ sfn-local ...`, then what it prints, `...`
//! and `[..]` where the output varies). A renamed flag or a changed message fails here.
//! `TRYCMD=overwrite cargo test --test doc_examples` rewrites the expected output.
//!
//! Commands run in the repository's root (paths are `definitions/...`, `fixtures/...`) against a
//! database of their own.

#[test]
fn readme_and_book_examples() {
    let db = tempfile::tempdir().unwrap();
    trycmd::TestCases::new()
        .register_bin(
            "sfn-local",
            std::path::Path::new(env!("CARGO_BIN_EXE_sfn-local")),
        )
        .env(
            "SFN_LOCAL_DB",
            db.path().join("examples.db").display().to_string(),
        )
        .env("NO_COLOR", "1")
        .case("README.md")
        .case("docs/src/*.md");
}
