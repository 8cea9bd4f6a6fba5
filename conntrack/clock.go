package conntrack

import (
	"time"

	"golang.org/x/sys/unix"
)

// The tracker's clock is CLOCK_MONOTONIC, in nanoseconds, which an XDP
// program reads too (bpf_ktime_get_coarse_ns: the same clock, up to a
// tick behind).

// Now reads the tracker's clock, for callers outside the per-packet path
// (a system call each time).
func Now() int64 {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

// At is the tracker's clock at t, worked out from one reading of both
// clocks: Go's time.Time carries a monotonic reading, but not
// CLOCK_MONOTONIC's origin, and a forwarder that has t already pays
// nothing more.
func At(t time.Time) int64 { return base.mono + int64(t.Sub(base.wall)) }

var base = struct {
	wall time.Time
	mono int64
}{time.Now(), Now()}
