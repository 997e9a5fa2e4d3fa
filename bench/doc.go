// Package bench holds the edge's out-of-process benchmark tools (bench/run,
// bench/baseline, bench/otlpsink) and the brand-scale Go benchmarks. It has
// no code of its own: see bench/README.md.
package bench
