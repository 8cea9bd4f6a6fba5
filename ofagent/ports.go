package ofagent

import "github.com/xswitch/xswitch/openflow"

// OpenFlow 1.3's port numbers are 32 bits wide, xswitch's (OpenFlow
// 1.0's) 16: the ports themselves are the same numbers, and the reserved
// ones at the top of each range map onto each other, as Open vSwitch maps
// them (ofp_port_to_ofp11, ofp11_port_to_ofp): OFPP_MAX is 0xff00 in one,
// 0xffffff00 in the other, and so on up.
const reservedOffset = openflow.PortMax - 0xff00

// portToOF gives an xswitch port number its OpenFlow 1.3 form.
func portToOF(p uint16) uint32 {
	if p > 0xff00 {
		return uint32(p) + reservedOffset
	}
	return uint32(p)
}

// portFromOF gives an OpenFlow 1.3 port number xswitch's form, if it has
// one: a port's number, or a reserved port's.
func portFromOF(p uint32) (uint16, bool) {
	switch {
	case p <= 0xff00:
		return uint16(p), true
	case p >= openflow.PortMax:
		return uint16(p - reservedOffset), true
	}
	return 0, false
}
