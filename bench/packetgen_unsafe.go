package bench

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// The bench's unsafe code: the header at the start of a slot of the packet
// generator's mmap'd tx ring.

var _ [unix.SizeofTpacket2Hdr - unsafe.Sizeof(tpacket2Hdr{})]struct{} // no smaller than the kernel's
var _ [unsafe.Sizeof(tpacket2Hdr{}) - unix.SizeofTpacket2Hdr]struct{} // no larger

// slotHeader is the struct tpacket2_hdr at the start of slot, which the
// ring's mapping keeps aligned.
func slotHeader(slot []byte) *tpacket2Hdr {
	return (*tpacket2Hdr)(unsafe.Pointer(unsafe.SliceData(slot)))
}
