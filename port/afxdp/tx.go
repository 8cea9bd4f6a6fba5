package afxdp

import "golang.org/x/sys/unix"

// Transmit copies as many frames as there are free tx frames and tx ring
// slots into the first socket's tx ring, then kicks the kernel. A frame
// longer than a UMEM frame goes out as a chain of descriptors, each but
// the last flagged XDP_PKT_CONTD, when the socket is bound with
// multi-buffer. An empty frame, or one longer than the port sends, is
// skipped. It returns how many frames it queued.
func (p *Port) Transmit(frames [][]byte) int {
	p.txMu.Lock()
	defer p.txMu.Unlock()
	s := p.sockets[0]
	p.reclaimTx(s)

	// Reserve what the frames need, at most what is free, and give back
	// what a frame that does not fit leaves over.
	need := 0
	for _, f := range frames {
		need += p.txDescs(len(f))
	}
	got, first := s.tx.reserve(uint32(min(need, len(p.txFree))))
	used, queued := uint32(0), 0
	for _, f := range frames {
		descs := p.txDescs(len(f))
		if descs == 0 || len(f) > p.maxTxFrame {
			continue
		}
		if used+uint32(descs) > got {
			break
		}
		for off := 0; off < len(f); off += int(p.frameSize) {
			addr := p.txFree[len(p.txFree)-1]
			p.txFree = p.txFree[:len(p.txFree)-1]
			piece := f[off:min(off+int(p.frameSize), len(f))]
			copy(s.umem[addr:addr+uint64(p.frameSize)], piece)
			d := unix.XDPDesc{Addr: addr, Len: uint32(len(piece))}
			if off+len(piece) < len(f) {
				d.Options = unix.XDP_PKT_CONTD
			}
			*s.tx.at(first + used) = d
			used++
		}
		queued++
	}
	s.tx.cancel(got - used)
	s.tx.submit(used)
	p.kickTx(s)
	return queued
}

// txDescs is how many descriptors a frame of n bytes takes.
func (p *Port) txDescs(n int) int {
	return (n + int(p.frameSize) - 1) / int(p.frameSize)
}

// reclaimTx moves frames the kernel has finished sending from the
// completion ring back to the free list. A chain's frames come back one
// by one.
func (p *Port) reclaimTx(s *socket) {
	n, first := s.comp.peek(s.comp.size)
	for i := range n {
		p.txFree = append(p.txFree, *s.comp.at(first + i))
	}
	s.comp.release(n)
}

// kickTx makes the kernel send what is on the tx ring. A copy-mode sendto
// sends at most the tx budget and answers EAGAIN while more is queued, so
// kick again, a bounded number of times, until the ring is drained. It
// answers EBUSY when the interface refused the frame it took last (the
// driver dropped it: a veth whose peer's MTU is smaller, say), and stops
// there: count it, and go on. Other errors leave the rest on the ring for
// the next Transmit: ENOBUFS means the socket buffer is full for now,
// ENETDOWN and ENXIO that the interface is down or gone.
func (p *Port) kickTx(s *socket) {
	for range p.maxKicks {
		if s.tx.pending() == 0 || !s.tx.needsWakeup() {
			return
		}
		switch s.kickTx() {
		case unix.EAGAIN:
		case unix.EBUSY:
			p.countRefused(s)
		default:
			return
		}
	}
}

// countRefused counts the frame that ends just before the tx ring's
// consumer cursor as refused: its descriptors are still on the ring,
// which nothing overwrites while txMu is held.
func (p *Port) countRefused(s *socket) {
	last := s.tx.consumer.Load() - 1
	bytes := uint64(s.tx.at(last).Len)
	for i := last - 1; i != last-uint32(s.tx.size) && s.tx.at(i).Options&unix.XDP_PKT_CONTD != 0; i-- {
		bytes += uint64(s.tx.at(i).Len)
	}
	p.txRefused.Add(1)
	p.txRefusedBytes.Add(bytes)
}
