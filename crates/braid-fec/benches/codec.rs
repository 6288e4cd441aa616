//! Criterion benchmarks of the codec: `cargo bench -p braid-fec --bench codec`.
//! The same workloads, with targets and ratios, print as one table with
//! `cargo run --release -p braid-fec --example codec_table`.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};

mod workloads;

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("codec");
    for mut w in workloads::all() {
        if w.bytes > 0 {
            group.throughput(Throughput::Bytes(w.bytes as u64));
        }
        group.bench_function(&w.name, |b| b.iter(&mut w.run));
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
