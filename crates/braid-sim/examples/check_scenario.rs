//! Parse scenario files and print each run, or the error: `cargo run -p braid-sim --example
//! check_scenario -- scenarios/*.toml`.

fn main() {
    let mut failed = false;
    for file in std::env::args().skip(1) {
        match braid_sim::Scenario::load(&file) {
            Ok(runs) => {
                for run in runs {
                    let paths: Vec<String> = run
                        .paths
                        .iter()
                        .map(|p| {
                            format!(
                                "{}{}: {} bit/s, {:?} one way, loss {:.4}/{:.4}",
                                p.name,
                                if p.shared { " (shared)" } else { "" },
                                p.forward.rate_bps,
                                p.forward.delay,
                                p.forward.loss.mean_loss(),
                                p.reverse.loss.mean_loss()
                            )
                        })
                        .collect();
                    println!("{file}: {} ({} flows) — {}", run.title(), run.flows, paths.join("; "));
                }
            }
            Err(e) => {
                failed = true;
                eprintln!("{e}");
            }
        }
    }
    if failed {
        std::process::exit(1);
    }
}
