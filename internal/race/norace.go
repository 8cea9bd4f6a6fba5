//go:build !race

// Package race reports whether the race detector is on: it changes
// allocation counts, so allocation tests skip under it.
package race

// Enabled is true when built with -race.
const Enabled = false
