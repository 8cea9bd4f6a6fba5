package afxdp

import "golang.org/x/sys/unix"

// Transmit copies as many frames as there are free tx frames and tx ring
// slots into the first socket's tx ring, then kicks the kernel. Frames
// longer than a UMEM frame are skipped. It returns how many frames it
// queued.
func (p *Port) Transmit(frames [][]byte) int {
	p.txMu.Lock()
	defer p.txMu.Unlock()
	s := p.sockets[0]
	p.reclaimTx(s)

	want := min(len(frames), len(p.txFree))
	got, first := s.tx.reserve(uint32(want))
	queued := uint32(0)
	for _, f := range frames {
		if queued == got {
			break
		}
		if len(f) > int(p.frameSize) {
			continue
		}
		addr := p.txFree[len(p.txFree)-1]
		p.txFree = p.txFree[:len(p.txFree)-1]
		copy(s.umem[addr:addr+uint64(p.frameSize)], f)
		*s.tx.at(first + queued) = unix.XDPDesc{Addr: addr, Len: uint32(len(f))}
		queued++
	}
	s.tx.cancel(got - queued)
	s.tx.submit(queued)
	p.kickTx(s)
	return int(queued)
}

// reclaimTx moves frames the kernel has finished sending from the
// completion ring back to the free list.
func (p *Port) reclaimTx(s *socket) {
	n, first := s.comp.peek(s.comp.size)
	for i := range n {
		p.txFree = append(p.txFree, *s.comp.at(first + i))
	}
	s.comp.release(n)
}

// kickTx makes the kernel send what is on the tx ring. A copy-mode sendto
// sends at most the tx budget and answers EAGAIN while more is queued, so
// kick again, a bounded number of times, until the ring is drained. Other
// errors leave the rest on the ring for the next Transmit: EBUSY and
// ENOBUFS mean the device or socket buffer is full for now, ENETDOWN and
// ENXIO that the interface is down or gone.
func (p *Port) kickTx(s *socket) {
	for range p.maxKicks {
		if s.tx.pending() == 0 || !s.tx.needsWakeup() {
			return
		}
		if errno := s.kickTx(); errno != unix.EAGAIN {
			return
		}
	}
}
