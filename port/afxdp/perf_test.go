package afxdp

import (
	"net"
	"testing"
	"time"

	"github.com/xswitch/xswitch/internal/race"
	"github.com/xswitch/xswitch/port"
)

const batchSize = 32

// echoBatch sends a batch of echo requests and takes in replies until it
// has as many as it sent or a second passes, releasing what it receives.
// It returns how many frames came back.
type echoBatch struct {
	p        *Port
	requests [][]byte
	frames   []port.Frame
}

func newEchoBatch(t testing.TB, b *testbed, p *Port) *echoBatch {
	e := &echoBatch{p: p, frames: make([]port.Frame, batchSize)}
	for i := range batchSize {
		e.requests = append(e.requests, b.echoRequest(t, 0xbe, uint16(i), 56))
	}
	return e
}

func (e *echoBatch) run() (sent, received int) {
	sent = e.p.Transmit(e.requests)
	q := e.p.rxQueues[0]
	deadline := time.Now().Add(time.Second)
	for received < sent && time.Now().Before(deadline) {
		n := q.Receive(e.frames)
		q.Release(e.frames[:n])
		received += n
	}
	return sent, received
}

func TestFramePathDoesNotAllocate(t *testing.T) {
	if race.Enabled {
		t.Skip("the race detector changes allocation counts")
	}
	b := newTestbed(t)
	p := b.open(t, Config{})
	e := newEchoBatch(t, b, p)
	e.run() // warm up: the peer's first replies may wait on its routing caches
	var sent, received int
	allocs := testing.AllocsPerRun(100, func() {
		s, r := e.run()
		sent += s
		received += r
	})
	if allocs != 0 {
		t.Errorf("Transmit + Receive + Release of a %d frame batch: %v allocations, want 0", batchSize, allocs)
	}
	// The replies must have flowed, or the measurement skipped the rx path.
	if received < sent/2 {
		t.Errorf("only %d echo replies for %d requests", received, sent)
	}
	t.Logf("%d requests, %d replies", sent, received)
}

// BenchmarkEchoRoundTrip sends batches of ICMP echo requests into the
// namespace and receives the kernel's replies: both directions of the
// port plus the peer's stack, frames per second counting both ways.
func BenchmarkEchoRoundTrip(b *testing.B) {
	tb := newTestbed(b)
	p := tb.open(b, Config{})
	e := newEchoBatch(b, tb, p)
	e.run()
	b.ReportAllocs()
	var frames int
	for b.Loop() {
		s, r := e.run()
		frames += s + r
	}
	b.ReportMetric(float64(frames)/b.Elapsed().Seconds(), "frames/s")
}

// BenchmarkTransmit measures the tx path alone: frames addressed to a MAC
// the peer does not own, which its stack drops on arrival.
func BenchmarkTransmit(b *testing.B) {
	tb := newTestbed(b)
	p := tb.open(b, Config{})
	frame := tb.echoRequest(b, 1, 1, 56)
	copy(frame[0:6], net.HardwareAddr{0x02, 0, 0, 0, 0xee, 0xee})
	frames := make([][]byte, 64)
	for i := range frames {
		frames[i] = frame
	}
	b.ReportAllocs()
	var sent int
	for b.Loop() {
		sent += p.Transmit(frames)
	}
	b.ReportMetric(float64(sent)/b.Elapsed().Seconds(), "frames/s")
	b.ReportMetric(float64(sent)/float64(b.N*len(frames)), "accepted")
}
