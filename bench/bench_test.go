package bench

import (
	"context"
	"testing"
	"time"
)

func TestSummarize(t *testing.T) {
	r := summarize("x", []sample{{pps: 3, bps: 300}, {pps: 1, bps: 100}, {pps: 2, bps: 200}, {pps: 10, bps: 1000}})
	if r.MedianPPS != 2.5 || r.MinPPS != 1 || r.MaxPPS != 10 || r.Samples != 4 {
		t.Errorf("summarize = %+v, want median 2.5, min 1, max 10, 4 samples", r)
	}
	if want := 250 * 8 / 1e9; r.MedianGbps != want {
		t.Errorf("MedianGbps = %v, want %v", r.MedianGbps, want)
	}
	if r := summarize("empty", nil); r.Samples != 0 || r.MedianPPS != 0 {
		t.Errorf("summarize(nil) = %+v", r)
	}
}

func TestRunRejectsOptions(t *testing.T) {
	good := Options{Duration: 2 * time.Second, Rounds: 1, Size: 64}
	for name, mutate := range map[string]func(*Options){
		"short duration": func(o *Options) { o.Duration = time.Second },
		"no rounds":      func(o *Options) { o.Rounds = 0 },
		"tiny frame":     func(o *Options) { o.Size = MinFrameSize - 1 },
		"jumbo frame":    func(o *Options) { o.Size = MaxFrameSize + 1 },
	} {
		opts := good
		mutate(&opts)
		if _, err := Run(context.Background(), opts); err == nil {
			t.Errorf("%s: Run accepted %+v", name, opts)
		}
	}
}
