package rstp

import (
	"cmp"
	"fmt"
)

// BridgeID is a bridge identifier (9.2.5): 4 bits of priority and 12 of
// system ID extension, which RSTP leaves 0, above a 48-bit MAC address. A
// lower identifier is a better one.
type BridgeID uint64

// NewBridgeID makes the identifier of a bridge with the given priority, a
// multiple of 4096, and address.
func NewBridgeID(priority uint16, addr [6]byte) BridgeID {
	id := BridgeID(priority&0xf000) << 48
	for i, b := range addr {
		id |= BridgeID(b) << (40 - 8*i)
	}
	return id
}

// Priority is the identifier's priority, system ID extension included.
func (id BridgeID) Priority() uint16 { return uint16(id >> 48) }

// Address is the identifier's MAC address.
func (id BridgeID) Address() [6]byte {
	var a [6]byte
	for i := range a {
		a[i] = byte(id >> (40 - 8*i))
	}
	return a
}

// String writes the identifier as the Linux bridge and OVS do:
// 8000.0a1b2c3d4e5f.
func (id BridgeID) String() string {
	return fmt.Sprintf("%04x.%012x", id.Priority(), uint64(id)&(1<<48-1))
}

// PortID is a port identifier (9.2.7): 4 bits of priority above a 12-bit
// port number.
type PortID uint16

// NewPortID makes the identifier of port number n with the given
// priority, a multiple of 16.
func NewPortID(priority uint8, n uint16) PortID {
	return PortID(uint16(priority&0xf0)<<8 | n&0xfff)
}

// Number is the port number.
func (p PortID) Number() uint16 { return uint16(p) & 0xfff }

// Priority is the port priority.
func (p PortID) Priority() uint8 { return uint8(p >> 8 & 0xf0) }

// priorityVector is a spanning tree priority vector (17.5): what a port
// or bridge knows of the way to the root, compared component by
// component, lower being better.
type priorityVector struct {
	root             BridgeID
	rootPathCost     uint32
	designatedBridge BridgeID
	designatedPort   PortID
	bridgePort       PortID // the port that received it, or the bridge's own
}

// compare orders two vectors component by component: negative when a is
// better than b.
func (a priorityVector) compare(b priorityVector) int {
	return cmp.Or(
		cmp.Compare(a.root, b.root),
		cmp.Compare(a.rootPathCost, b.rootPathCost),
		cmp.Compare(a.designatedBridge, b.designatedBridge),
		cmp.Compare(a.designatedPort, b.designatedPort),
		cmp.Compare(a.bridgePort, b.bridgePort),
	)
}

// news is how a received message priority vector compares with what a
// port holds (17.6).
type news int

const (
	inferior news = iota
	same
	superior
)

// against compares the message vector msg with a port's vector port.
// msg is superior if it is better, or if it comes from the same
// designated bridge and port as port, which it then replaces even if it
// is worse: that bridge's news are the latest.
func (msg priorityVector) against(port priorityVector) news {
	m, p := msg, port
	m.bridgePort, p.bridgePort = 0, 0
	switch {
	case m == p:
		return same
	case m.compare(p) < 0:
		return superior
	case m.designatedBridge.Address() == p.designatedBridge.Address() &&
		m.designatedPort.Number() == p.designatedPort.Number():
		return superior
	}
	return inferior
}

// Times are the timer values that travel with a priority vector, in
// whole seconds (17.19.22).
type Times struct {
	MessageAge, MaxAge, HelloTime, ForwardDelay uint16
}
