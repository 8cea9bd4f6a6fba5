package bench

import (
	"errors"
	"fmt"
	"net"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// packetRing transmits one frame again and again from an AF_PACKET socket
// through a TPACKET_V2 tx ring, bypassing the interface's qdisc
// (PACKET_QDISC_BYPASS): the packet generator. Each slot of the ring holds
// a copy of the frame, written once; a send marks the free slots as to be
// sent (after an edit, if any) and makes one sendto for all of them.
//
// The kernel walks the ring in order, and a slot it has sent (or its
// device dropped) is free again once the kernel has let go of the frame's
// skb, which it marks in the slot's status. done and next are free
// running slot counters: the slots from done to next are the kernel's.
type packetRing struct {
	fd        int
	ring      []byte
	slotSize  int
	slots     int
	length    int // of the frame
	done      uint64
	next      uint64
	sent      atomic.Uint64
	slotHeads []*tpacket2Hdr
}

// The ring holds packetRingSlots frames, which lets one sendto carry
// about a millisecond of the generator's frames, or fewer of jumbo frames,
// so that it stays within packetRingBytes.
const (
	packetRingSlots = 2048
	packetRingBytes = 32 << 20
)

// tpacketDataOffset is where a TPACKET_V2 tx slot's frame starts:
// TPACKET2_HDRLEN less the struct sockaddr_ll that only rx slots carry.
const tpacketDataOffset = 32

// openPacketRing opens a packetRing sending frame out of iface, an
// interface of the calling thread's namespace.
func openPacketRing(iface string, frame []byte) (_ *packetRing, err error) {
	dev, err := net.InterfaceByName(iface)
	if err != nil {
		return nil, fmt.Errorf("packet generator: interface %q: %w", iface, err)
	}
	slotSize := 128
	for slotSize < tpacketDataOffset+len(frame) {
		slotSize *= 2
	}
	slots := min(packetRingSlots, packetRingBytes/slotSize)
	blockSize := max(slotSize, unix.Getpagesize())
	// Protocol 0: the socket receives nothing.
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("packet generator: open a packet socket: %w", err)
	}
	p := &packetRing{fd: fd, slotSize: slotSize, slots: slots, length: len(frame)}
	defer func() {
		if err != nil {
			p.close()
			err = fmt.Errorf("packet generator on %q: %w", iface, err)
		}
	}()
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_VERSION, unix.TPACKET_V2); err != nil {
		return nil, fmt.Errorf("set TPACKET_V2: %w", err)
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_QDISC_BYPASS, 1); err != nil {
		return nil, fmt.Errorf("set PACKET_QDISC_BYPASS: %w", err)
	}
	req := unix.TpacketReq{
		Block_size: uint32(blockSize),
		Block_nr:   uint32(slots * slotSize / blockSize),
		Frame_size: uint32(slotSize),
		Frame_nr:   uint32(slots),
	}
	if err := unix.SetsockoptTpacketReq(fd, unix.SOL_PACKET, unix.PACKET_TX_RING, &req); err != nil {
		return nil, fmt.Errorf("set up a tx ring of %d frames of %d bytes: %w", req.Frame_nr, req.Frame_size, err)
	}
	p.ring, err = unix.Mmap(fd, 0, int(req.Block_size*req.Block_nr), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return nil, fmt.Errorf("map the tx ring: %w", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Ifindex: dev.Index}); err != nil {
		return nil, fmt.Errorf("bind: %w", err)
	}
	for i := range slots {
		slot := p.ring[i*slotSize : (i+1)*slotSize]
		copy(slot[tpacketDataOffset:], frame)
		h := slotHeader(slot)
		h.len = uint32(len(frame))
		p.slotHeads = append(p.slotHeads, h)
	}
	return p, nil
}

// send marks every free slot as to be sent, calling edit on its frame
// first (nil: sent as written), and asks the kernel to send them. The
// kernel's refusals for now (a full socket buffer: EAGAIN; a device that
// dropped a frame: ENOBUFS) leave the rest to the next send; any other is
// returned.
func (p *packetRing) send(edit func(frame []byte)) error {
	sent := uint64(0)
	for p.done != p.next && p.slotHeads[p.done%uint64(p.slots)].status.Load()&slotBusy == 0 {
		p.done++
		sent++
	}
	p.sent.Add(sent)
	for p.next-p.done < uint64(p.slots) {
		i := int(p.next % uint64(p.slots))
		if edit != nil {
			off := i*p.slotSize + tpacketDataOffset
			edit(p.ring[off : off+p.length])
		}
		p.slotHeads[i].status.Store(unix.TP_STATUS_SEND_REQUEST)
		p.next++
	}
	_, _, errno := unix.Syscall6(unix.SYS_SENDTO, uintptr(p.fd), 0, 0, unix.MSG_DONTWAIT, 0, 0)
	switch errno {
	case 0, unix.EAGAIN, unix.ENOBUFS:
		return nil
	}
	if h := p.slotHeads[p.done%uint64(p.slots)]; h.status.Load()&unix.TP_STATUS_WRONG_FORMAT != 0 {
		return fmt.Errorf("transmit: the kernel refused the frame as malformed: %w", errno)
	}
	return fmt.Errorf("transmit: %w", errno)
}

func (p *packetRing) close() error {
	var errs []error
	if p.ring != nil {
		errs = append(errs, unix.Munmap(p.ring))
		p.ring = nil
	}
	if p.fd >= 0 {
		errs = append(errs, unix.Close(p.fd))
		p.fd = -1
	}
	return errors.Join(errs...)
}

// slotBusy are the status bits of a slot the kernel has not let go of:
// what is not TP_STATUS_AVAILABLE, less the timestamp bits the kernel may
// add to it.
const slotBusy = unix.TP_STATUS_SEND_REQUEST | unix.TP_STATUS_SENDING | unix.TP_STATUS_WRONG_FORMAT

// tpacket2Hdr is the kernel's struct tpacket2_hdr at the start of each
// slot; tx uses its status and length.
type tpacket2Hdr struct {
	status atomic.Uint32
	len    uint32
	_      [24]byte
}
