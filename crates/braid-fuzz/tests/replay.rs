//! Every file of the fuzz corpora (`/fuzz/corpus/TARGET`) and every finding kept as a
//! regression (`/fuzz/regressions/TARGET`) through its target: what the fuzzer found stays
//! fixed, in a plain `cargo test`.

use std::path::{Path, PathBuf};

fn files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut files: Vec<PathBuf> =
        entries.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.is_file()).collect();
    files.sort();
    files
}

#[test]
fn every_corpus_and_regression_file_passes_its_target() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz");
    let mut total = 0;
    for (name, target) in braid_fuzz::TARGETS {
        let mut count = 0;
        for kind in ["corpus", "regressions"] {
            for file in files(&root.join(kind).join(name)) {
                let data = std::fs::read(&file).unwrap();
                let outcome = std::panic::catch_unwind(|| target(&data));
                assert!(outcome.is_ok(), "{} fails its target", file.display());
                count += 1;
            }
        }
        assert!(count > 0, "no corpus for target {name}");
        total += count;
    }
    eprintln!("{total} inputs replayed");
}
