package afxdp

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/xswitch/xswitch/header"
	"github.com/xswitch/xswitch/port"
)

// fakeKernel plays the kernel's side of one socket's four rings, over Go
// memory, so that chained descriptors can be tested without a kernel. It
// receives as copy mode does: each buffer gets rxHeadroom bytes of
// headroom, a frame takes as many buffers as it needs, and a frame's
// descriptors are published together.
type fakeKernel struct {
	t          *testing.T
	s          *socket
	fill, comp ringView[uint64]
	rx, tx     ringView[unix.XDPDesc]
	frameSize  int
}

func newFakeKernel(t *testing.T, frameSize, frameCount, ringSize int) *fakeKernel {
	k := &fakeKernel{
		t:         t,
		fill:      plainView[uint64](ringSize, 0),
		comp:      plainView[uint64](ringSize, 0),
		rx:        plainView[unix.XDPDesc](ringSize, 0),
		tx:        plainView[unix.XDPDesc](ringSize, 0),
		frameSize: frameSize,
	}
	k.s = &socket{
		fd:   -1,
		umem: make([]byte, frameSize*frameCount),
		fill: newProducerRing(k.fill),
		comp: newConsumerRing(k.comp),
		rx:   newConsumerRing(k.rx),
		tx:   newProducerRing(k.tx),
	}
	return k
}

// rxQueue makes the socket's receive queue and hands it the first half of
// the UMEM, as Open does.
func (k *fakeKernel) rxQueue(maxFrame int, multiBuffer bool) *rxQueue {
	q := newRxQueue(k.s, uint32(k.frameSize), maxFrame, multiBuffer)
	rxFrames := uint32(len(k.s.umem) / k.frameSize / 2)
	got, first := k.s.fill.reserve(rxFrames)
	for i := range got {
		*k.s.fill.at(first + i) = uint64(i) * uint64(k.frameSize)
	}
	k.s.fill.submit(got)
	return q
}

// takeFill is the kernel taking a buffer off the fill ring.
func (k *fakeKernel) takeFill() uint64 {
	c := k.fill.consumer.Load()
	if k.fill.producer.Load() == c {
		k.t.Fatal("fake kernel: fill ring empty")
	}
	addr := k.fill.entries[c&uint32(len(k.fill.entries)-1)]
	k.fill.consumer.Store(c + 1)
	return addr
}

// deliverDescs publishes one frame as descriptors of the given lengths,
// each flagged XDP_PKT_CONTD when contd says so, filled with pattern
// bytes; it returns the frame's bytes.
func (k *fakeKernel) deliverDescs(lengths []int, contd []bool, pattern byte) []byte {
	var frame []byte
	p := k.rx.producer.Load()
	mask := uint32(len(k.rx.entries) - 1)
	if p-k.rx.consumer.Load()+uint32(len(lengths)) > uint32(len(k.rx.entries)) {
		k.t.Fatal("fake kernel: rx ring full")
	}
	for i, n := range lengths {
		addr := k.takeFill() + rxHeadroom
		for j := range n {
			k.s.umem[addr+uint64(j)] = pattern + byte(len(frame)+j)
		}
		frame = append(frame, k.s.umem[addr:addr+uint64(n)]...)
		d := unix.XDPDesc{Addr: addr, Len: uint32(n)}
		if contd[i] {
			d.Options = unix.XDP_PKT_CONTD
		}
		k.rx.entries[(p+uint32(i))&mask] = d
	}
	k.rx.producer.Store(p + uint32(len(lengths)))
	return frame
}

// deliver publishes a frame of n bytes as copy mode splits it.
func (k *fakeKernel) deliver(n int, pattern byte) []byte {
	per := k.frameSize - rxHeadroom
	var lengths []int
	var contd []bool
	for rest := n; rest > 0 || len(lengths) == 0; rest -= per {
		lengths = append(lengths, min(rest, per))
		contd = append(contd, rest > per)
	}
	return k.deliverDescs(lengths, contd, pattern)
}

// fillCount is how many buffers sit on the fill ring.
func (k *fakeKernel) fillCount() int {
	return int(k.fill.producer.Load() - k.fill.consumer.Load())
}

// fillAddrs are the buffers on the fill ring, sorted.
func (k *fakeKernel) fillAddrs() []uint64 {
	var out []uint64
	mask := uint32(len(k.fill.entries) - 1)
	for i := k.fill.consumer.Load(); i != k.fill.producer.Load(); i++ {
		out = append(out, k.fill.entries[i&mask])
	}
	slices.Sort(out)
	return out
}

// rxPending is how many descriptors the kernel has published and the
// queue has not consumed.
func (k *fakeKernel) rxPending() int {
	return int(k.rx.producer.Load() - k.rx.consumer.Load())
}

func TestReceiveReassemblesChains(t *testing.T) {
	k := newFakeKernel(t, 4096, 64, 32)
	q := k.rxQueue(9234, true)
	initial := k.fillAddrs()
	var want [][]byte
	for i, n := range []int{60, 3840, 3841, 9234, 1500, 7680, 7681} {
		want = append(want, k.deliver(n, byte(i*31)))
	}
	frames := make([]port.Frame, 16)
	n := q.Receive(frames)
	if n != len(want) {
		t.Fatalf("Receive = %d frames, want %d", n, len(want))
	}
	for i, f := range frames[:n] {
		if !bytes.Equal(f.Data, want[i]) {
			t.Errorf("frame %d: %d bytes differ from the %d delivered", i, len(f.Data), len(want[i]))
		}
		chained := f.Handle&chainHandle != 0
		if wantChained := len(want[i]) > 3840; chained != wantChained {
			t.Errorf("frame %d (%d bytes): chained = %v, want %v", i, len(want[i]), chained, wantChained)
		}
		// A rewrite that pushes a VLAN tag needs room past the frame.
		if cap(f.Data)-len(f.Data) < header.VLANTagLen && len(f.Data) <= 3836 {
			t.Errorf("frame %d (%d bytes) has %d bytes of room to grow", i, len(f.Data), cap(f.Data)-len(f.Data))
		}
	}
	if k.rxPending() != 0 {
		t.Errorf("%d descriptors left on the rx ring", k.rxPending())
	}
	q.Release(frames[:n])
	if got := k.fillAddrs(); !slices.Equal(got, initial) {
		t.Errorf("after Release the fill ring holds %d buffers, want the %d it started with", len(got), len(initial))
	}
	if len(q.freeSlots) != chainSlots {
		t.Errorf("%d reassembly slots free after Release, want %d", len(q.freeSlots), chainSlots)
	}
}

// TestReceiveTakesWholeFramesOnly cuts batches inside the descriptors of
// a chain, by the batch size and by running out of reassembly slots: the
// chain must come whole in a later Receive.
func TestReceiveTakesWholeFramesOnly(t *testing.T) {
	k := newFakeKernel(t, 4096, 512, 256)
	q := k.rxQueue(9234, true)
	a, b, c := k.deliver(9000, 1), k.deliver(60, 2), k.deliver(5000, 3)
	frames := make([]port.Frame, 2)
	if n := q.Receive(frames); n != 2 || !bytes.Equal(frames[0].Data, a) || !bytes.Equal(frames[1].Data, b) {
		t.Fatalf("first Receive of 2: %d frames, want the 9000- and 60-byte ones", n)
	}
	if k.rxPending() != 2 {
		t.Fatalf("after the first Receive %d descriptors are left on the rx ring, want the 5000-byte chain's 2", k.rxPending())
	}
	q.Release(frames)
	if n := q.Receive(frames); n != 1 || !bytes.Equal(frames[0].Data, c) {
		t.Fatalf("second Receive: %d frames, want the 5000-byte chain", n)
	}
	q.Release(frames[:1])

	// A Receive of one frame peeks maxRxChain (18) descriptors. Four
	// chains too long to take fill 16 of them; the good chain after them
	// starts inside the peek and ends past it, so it must wait.
	for i := range 4 {
		k.deliver(4*3840, byte(10+i))
	}
	d := k.deliver(9000, 14)
	if n := q.Receive(frames[:1]); n != 0 {
		t.Fatalf("Receive after the long chains: %d frames, want 0 (the next chain is cut by the peek)", n)
	}
	if n := q.Receive(frames[:1]); n != 1 || !bytes.Equal(frames[0].Data, d) {
		t.Fatalf("next Receive: %d frames, want the 9000-byte chain", n)
	}
	q.Release(frames[:1])

	var want [][]byte
	for i := range chainSlots + 1 {
		want = append(want, k.deliver(4000, byte(i)))
	}
	batch := make([]port.Frame, 256)
	n := q.Receive(batch)
	if n != chainSlots {
		t.Fatalf("Receive of %d chains: %d frames, want %d (one per slot)", chainSlots+1, n, chainSlots)
	}
	if m := q.Receive(batch[n:]); m != 0 {
		t.Fatalf("Receive with every slot taken: %d frames, want 0", m)
	}
	q.Release(batch[:n])
	if m := q.Receive(batch); m != 1 || !bytes.Equal(batch[0].Data, want[chainSlots]) {
		t.Fatalf("Receive after Release: %d frames, want the last chain", m)
	}
	q.Release(batch[:1])
}

func TestReceiveDropsChainsTooLong(t *testing.T) {
	k := newFakeKernel(t, 4096, 256, 128)
	q := k.rxQueue(9234, true)
	total := k.fillCount()
	frames := make([]port.Frame, 8)

	// Three full buffers: 11520 bytes, more than the 9234 the queue takes.
	k.deliver(11520, 1)
	// A chain of 30 descriptors: longer than any the kernel builds.
	lengths, contd := make([]int, 30), make([]bool, 30)
	for i := range lengths {
		lengths[i], contd[i] = 100, i < 29
	}
	k.deliverDescs(lengths, contd, 2)
	good := k.deliver(9234, 3)

	// One frame per call: the 30-descriptor chain spans two peeks.
	var got []port.Frame
	for range 4 {
		n := q.Receive(frames[:1])
		got = append(got, frames[:n]...)
		q.Release(frames[:n])
	}
	if len(got) != 1 || !bytes.Equal(got[0].Data, good) {
		t.Fatalf("received %d frames, want only the 9234-byte one after the two dropped", len(got))
	}
	if n := q.oversize.Load(); n != 2 {
		t.Errorf("oversize = %d, want 2", n)
	}
	if k.fillCount() != total || k.rxPending() != 0 {
		t.Errorf("fill ring holds %d of %d buffers, %d descriptors unreleased: a dropped chain leaked", k.fillCount(), total, k.rxPending())
	}

	// A socket bound without multi-buffer has no slots: a chain there,
	// which the kernel should never send, is dropped too.
	k2 := newFakeKernel(t, 4096, 64, 32)
	single := k2.rxQueue(3840, false)
	k2.deliver(5000, 4)
	small := k2.deliver(100, 5)
	if n := single.Receive(frames); n != 1 || !bytes.Equal(frames[0].Data, small) {
		t.Fatalf("single-buffer queue: %d frames, want the 100-byte one", n)
	}
	if n := single.oversize.Load(); n != 1 {
		t.Errorf("single-buffer queue: oversize = %d, want 1", n)
	}
}

// TestReceiveReleaseAgainstFIFO receives frames of random lengths in
// random batches and releases them in random order and groups, against a
// plain FIFO of what was delivered: every frame comes out whole and in
// order, and no buffer or slot is lost.
func TestReceiveReleaseAgainstFIFO(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	k := newFakeKernel(t, 4096, 1024, 512)
	q := k.rxQueue(9234, true)
	total := k.fillCount()
	var fifo [][]byte
	var held []port.Frame
	frames := make([]port.Frame, 64)
	for round := range 3000 {
		// Deliver while the kernel has buffers and ring space to spare.
		for range rng.IntN(8) {
			n := 1 + rng.IntN(9234)
			if k.fillCount() < 3 || k.rxPending()+3 > 512 {
				break
			}
			fifo = append(fifo, k.deliver(n, byte(round)))
		}
		n := q.Receive(frames[:1+rng.IntN(len(frames))])
		for i, f := range frames[:n] {
			if len(fifo) == 0 || !bytes.Equal(f.Data, fifo[0]) {
				t.Fatalf("round %d: frame %d of %d bytes is not the next delivered", round, i, len(f.Data))
			}
			fifo = fifo[1:]
		}
		held = append(held, frames[:n]...)
		rng.Shuffle(len(held), func(i, j int) { held[i], held[j] = held[j], held[i] })
		release := rng.IntN(len(held) + 1)
		q.Release(held[:release])
		held = append(held[:0], held[release:]...)
	}
	q.Release(held)
	for len(fifo) > 0 {
		n := q.Receive(frames)
		if n == 0 {
			t.Fatalf("%d delivered frames never came out", len(fifo))
		}
		for _, f := range frames[:n] {
			if !bytes.Equal(f.Data, fifo[0]) {
				t.Fatal("a frame out of order at the end")
			}
			fifo = fifo[1:]
		}
		q.Release(frames[:n])
	}
	if k.fillCount() != total || len(q.freeSlots) != chainSlots {
		t.Errorf("fill ring holds %d of %d buffers and %d of %d slots are free", k.fillCount(), total, len(q.freeSlots), chainSlots)
	}
}

// fakeTxPort is a Port over a fake kernel, with the second half of the
// UMEM to transmit from, as Open leaves it.
func fakeTxPort(k *fakeKernel, maxTxFrame int) *Port {
	p := &Port{sockets: []*socket{k.s}, frameSize: uint32(k.frameSize), maxTxFrame: maxTxFrame, maxKicks: 1}
	frames := len(k.s.umem) / k.frameSize
	for i := frames / 2; i < frames; i++ {
		p.txFree = append(p.txFree, uint64(i*k.frameSize))
	}
	return p
}

// sent takes what Transmit put on the tx ring off it, as the kernel would,
// joins chains into frames, checks their descriptors and completes them.
func (k *fakeKernel) sent() [][]byte {
	var frames [][]byte
	var frame []byte
	mask := uint32(len(k.tx.entries) - 1)
	for i := k.tx.consumer.Load(); i != k.tx.producer.Load(); i++ {
		d := k.tx.entries[i&mask]
		if d.Len == 0 || d.Len > uint32(k.frameSize) || d.Addr%uint64(k.frameSize) != 0 {
			k.t.Fatalf("tx descriptor %+v: empty, longer than a UMEM frame or not at one's start", d)
		}
		frame = append(frame, k.s.umem[d.Addr:d.Addr+uint64(d.Len)]...)
		if d.Options&unix.XDP_PKT_CONTD == 0 {
			frames = append(frames, frame)
			frame = nil
		}
		c := k.comp.producer.Load()
		k.comp.entries[c&uint32(len(k.comp.entries)-1)] = d.Addr
		k.comp.producer.Store(c + 1)
	}
	if frame != nil {
		k.t.Fatal("the tx ring ends inside a chain")
	}
	k.tx.consumer.Store(k.tx.producer.Load())
	return frames
}

func TestTransmitSplitsChains(t *testing.T) {
	k := newFakeKernel(t, 4096, 64, 64)
	p := fakeTxPort(k, 3*4096)
	var frames, want [][]byte
	for i, n := range []int{60, 4096, 4097, 9298, 3*4096 + 1, 0, 8192, 3 * 4096} {
		f := make([]byte, n)
		for j := range f {
			f[j] = byte(i*7 + j)
		}
		frames = append(frames, f)
		if n > 0 && n <= 3*4096 {
			want = append(want, f)
		}
	}
	if n := p.Transmit(frames); n != len(want) {
		t.Fatalf("Transmit = %d, want %d (the empty and the over-long frame skipped)", n, len(want))
	}
	got := k.sent()
	if len(got) != len(want) {
		t.Fatalf("%d frames on the tx ring, want %d", len(got), len(want))
	}
	for i := range got {
		if !bytes.Equal(got[i], want[i]) {
			t.Errorf("frame %d: sent %d bytes that differ from the %d given", i, len(got[i]), len(want[i]))
		}
	}
	p.Transmit(nil) // reclaims the completions
	if len(p.txFree) != 32 {
		t.Errorf("%d free tx frames after completion, want 32", len(p.txFree))
	}
}

// TestTransmitQueuesWholeChainsOnly gives Transmit more than the free tx
// frames or tx ring slots hold: it stops at a frame boundary, never inside
// a chain, and later calls send the rest.
func TestTransmitQueuesWholeChainsOnly(t *testing.T) {
	// 5 tx frames: the second 9000-byte frame (3 descriptors) does not fit.
	k := newFakeKernel(t, 4096, 10, 8)
	p := fakeTxPort(k, 3*4096)
	frames := [][]byte{make([]byte, 9000), make([]byte, 9000), make([]byte, 60)}
	if n := p.Transmit(frames); n != 1 {
		t.Fatalf("Transmit with 5 tx frames = %d, want 1 (the next chain needs 3 more)", n)
	}
	if got := k.sent(); len(got) != 1 || len(got[0]) != 9000 {
		t.Fatalf("sent %d frames, want the first 9000-byte one", len(got))
	}
	if n := p.Transmit(frames[1:]); n != 2 {
		t.Fatalf("Transmit after completion = %d, want 2", n)
	}

	// An 8-slot tx ring with 2 slots taken: a 3-descriptor chain fits
	// twice, the third waits.
	k = newFakeKernel(t, 4096, 64, 8)
	p = fakeTxPort(k, 3*4096)
	p.Transmit([][]byte{make([]byte, 60), make([]byte, 60)})
	if n := p.Transmit([][]byte{make([]byte, 9000), make([]byte, 9000), make([]byte, 9000)}); n != 2 {
		t.Fatalf("Transmit of three chains into 6 free slots = %d, want 2", n)
	}
	if got := k.sent(); len(got) != 4 {
		t.Fatalf("sent %d frames, want 4", len(got))
	}
}

// FuzzReceiveChains delivers descriptors of any length and chaining the
// input describes, a whole number of frames at a time as the kernel
// publishes them, receives them in batches of any size and releases them,
// against the obvious reading of the same descriptors: a frame is a run
// ending in one without XDP_PKT_CONTD, dropped when longer than maxFrame
// bytes or maxRxChain descriptors. Nothing may panic, come out different,
// or keep a buffer.
func FuzzReceiveChains(f *testing.F) {
	f.Add([]byte{3, 0x80, 0xff, 0x80, 0xff, 0x00, 0x10, 8})
	f.Add([]byte{20, 0x8f, 0, 0x8f, 0, 0x8f, 0, 0x8f, 0, 0x8f, 0, 0x8f, 0, 0x8f, 0, 0x8f, 0, 0x8f, 0, 0x8f, 0,
		0x80, 1, 0x80, 1, 0x80, 1, 0x80, 1, 0x80, 1, 0x80, 1, 0x80, 1, 0x80, 1, 0x80, 1, 0, 1, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		const maxFrame = 9234
		k := newFakeKernel(t, 4096, 512, 256)
		q := k.rxQueue(maxFrame, true)
		total := k.fillCount()
		var want [][]byte
		var oversize uint64
		frames := make([]port.Frame, 64)
		for len(data) > 0 {
			n := 1 + int(data[0])%64
			data = data[1:]
			var lengths []int
			var contd []bool
			for i := 0; i < n && len(data) >= 2; i++ {
				lengths = append(lengths, 1+(int(data[0]&0x7f)<<8|int(data[1]))%(4096-rxHeadroom))
				contd = append(contd, data[0]&0x80 != 0)
				data = data[2:]
			}
			if len(lengths) == 0 {
				break
			}
			contd[len(contd)-1] = false // the kernel publishes whole frames
			frame := k.deliverDescs(lengths, contd, byte(len(data)))
			// The obvious reading: split what was delivered into frames.
			start, off := 0, 0
			for i := range lengths {
				if contd[i] {
					continue
				}
				size := 0
				for _, l := range lengths[start : i+1] {
					size += l
				}
				if i+1-start > maxRxChain || size > maxFrame {
					oversize++
				} else {
					want = append(want, frame[off:off+size])
				}
				start, off = i+1, off+size
			}
			batch := len(frames)
			if len(data) > 0 {
				batch = 1 + int(data[0])%len(frames)
				data = data[1:]
			}
			// A Receive that drops a chain may return no frame and leave
			// the rest of it for the next; the forwarder calls again as
			// long as the socket polls readable, which is while the rx
			// ring holds anything.
			for k.rxPending() > 0 {
				before := k.rxPending()
				got := q.Receive(frames[:batch])
				for _, fr := range frames[:got] {
					if len(want) == 0 || !bytes.Equal(fr.Data, want[0]) {
						t.Fatalf("received a %d-byte frame that is not the next one expected", len(fr.Data))
					}
					want = want[1:]
				}
				q.Release(frames[:got])
				if got == 0 && k.rxPending() == before {
					t.Fatalf("Receive of %d makes no progress with %d descriptors on the rx ring", batch, before)
				}
			}
		}
		if len(want) != 0 || q.oversize.Load() != oversize {
			t.Fatalf("%d frames never came out; oversize %d, want %d", len(want), q.oversize.Load(), oversize)
		}
		if k.fillCount() != total || k.rxPending() != 0 || len(q.freeSlots) != chainSlots {
			t.Fatalf("fill ring holds %d of %d buffers, %d descriptors unconsumed, %d of %d slots free",
				k.fillCount(), total, k.rxPending(), len(q.freeSlots), chainSlots)
		}
	})
}
