package header

// MPLS (RFC 3032): a label stack between the Ethernet header (and its VLAN
// tags) and the packet it carries, of label stack entries of 32 bits:
//
//	0                   20  23 24      32
//	| label             | TC |S|  TTL   |
//
// S (bottom of stack) marks the last entry. Nothing in the stack says
// what the packet under it is: who pops the last label says.
const (
	EtherTypeMPLS          = 0x8847 // unicast
	EtherTypeMPLSMulticast = 0x8848

	MPLSLen = 4

	MPLSLabelShift = 12
	MPLSLabelMask  = 0xfffff000
	MPLSTCShift    = 9
	MPLSTCMask     = 0x00000e00
	MPLSBOSShift   = 8
	MPLSBOSMask    = 0x00000100
	MPLSTTLMask    = 0x000000ff

	// MPLSLabelIPv4Null and MPLSLabelIPv6Null are the explicit null labels
	// (RFC 3032), which OVS gives the label it pushes onto an IPv4 or
	// IPv6 packet.
	MPLSLabelIPv4Null = 0
	MPLSLabelIPv6Null = 2
)

// IsMPLS reports whether etherType is MPLS's, unicast or multicast.
func IsMPLS(etherType uint16) bool {
	return etherType == EtherTypeMPLS || etherType == EtherTypeMPLSMulticast
}
