#![no_main]
braid_fuzz_targets::target!(braid_fuzz::wire::symbol_parts);
