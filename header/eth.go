package header

import "encoding/binary"

// Ethernet II:
//
//	0      6      12   14
//	| dst  | src  |type| payload
const (
	EthernetDstOffset  = 0
	EthernetSrcOffset  = 6
	EthernetTypeOffset = 12
	EthernetLen        = 14
	MACLen             = 6
)

// EtherTypes.
const (
	EtherTypeIPv4 = 0x0800
	EtherTypeARP  = 0x0806
	EtherTypeVLAN = 0x8100 // an 802.1Q (customer) tag
	EtherTypeIPv6 = 0x86dd
	EtherTypeQinQ = 0x88a8 // an 802.1ad (service) tag
	// EtherTypeTEB is transparent Ethernet bridging: Geneve's protocol
	// type for an Ethernet payload.
	EtherTypeTEB = 0x6558

	// MinEtherType is the least EtherType; a smaller value in the type
	// field is an 802.3 length.
	MinEtherType = 0x0600
)

// Ethernet is an Ethernet II header.
type Ethernet []byte

func (b Ethernet) SetDst(mac [MACLen]byte) { copy(b[EthernetDstOffset:], mac[:]) }
func (b Ethernet) SetSrc(mac [MACLen]byte) { copy(b[EthernetSrcOffset:], mac[:]) }

// Type is the EtherType, or a VLAN tag's TPID when the frame is tagged.
func (b Ethernet) Type() uint16     { return binary.BigEndian.Uint16(b[EthernetTypeOffset:]) }
func (b Ethernet) SetType(t uint16) { binary.BigEndian.PutUint16(b[EthernetTypeOffset:], t) }

// A VLAN tag sits where the EtherType was: the TPID (EtherTypeVLAN or
// EtherTypeQinQ), then the TCI, then the EtherType or the next tag.
//
//	0      2             4
//	| TPID | PCP|DEI|VID |
const (
	VLANTagLen    = 4
	VLANTCIOffset = 2
	VLANVIDMask   = 0x0fff
	VLANDEIMask   = 0x1000
	VLANPCPMask   = 0xe000
	VLANPCPShift  = 13
)

// VLAN is a VLAN tag.
type VLAN []byte

// OuterTag is the outermost tag of a frame that has one (IsTPID(b.Type())).
func (b Ethernet) OuterTag() VLAN { return VLAN(b[EthernetTypeOffset:]) }

func (b VLAN) TCI() uint16       { return binary.BigEndian.Uint16(b[VLANTCIOffset:]) }
func (b VLAN) SetTPID(t uint16)  { binary.BigEndian.PutUint16(b, t) }
func (b VLAN) SetTCI(tci uint16) { binary.BigEndian.PutUint16(b[VLANTCIOffset:], tci) }

// IsTPID reports whether etherType starts a VLAN tag.
func IsTPID(etherType uint16) bool { return etherType == EtherTypeVLAN || etherType == EtherTypeQinQ }

// ARP for IPv4 over Ethernet (RFC 826), the only ARP the key reads:
//
//	0    2    4  5  6    8     14    18    24    28
//	|hrd |pro |hl|pl| op | sha | spa | tha | tpa |
const (
	ARPOpOffset  = 6
	ARPSHAOffset = 8
	ARPSPAOffset = 14
	ARPTHAOffset = 18
	ARPTPAOffset = 24
	ARPLen       = 28
)
