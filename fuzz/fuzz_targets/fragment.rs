#![no_main]
braid_fuzz_targets::target!(braid_fuzz::tunnel::fragments);
