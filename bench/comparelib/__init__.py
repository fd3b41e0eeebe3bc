"""Parts of bench/compare: servers (start/stop on loopback), rounds (interleaved
measurements, medians of per-round ratios) and rows (the table's rows per backend)."""
