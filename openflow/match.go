package openflow

// Match is an ofp_match of type OFPMT_OXM: a list of OXM TLVs.
type Match struct {
	Fields []OXM
}

// OXM is one OXM TLV. Which fields exist, their widths and their
// prerequisites are the switch's concern (ofagent); the codec checks only
// the framing.
type OXM struct {
	Class uint16
	Field uint8 // 7 bits
	// Experimenter is the experimenter id of an OXMClassExperimenter TLV,
	// which comes before its Value on the wire.
	Experimenter uint32
	Value        []byte
	Mask         []byte // nil when the TLV has no mask; else as long as Value
}

// The OXM classes.
const (
	OXMClassNXM0          uint16 = 0x0000 // Nicira's NXM_OF_* fields
	OXMClassNXM1          uint16 = 0x0001 // Nicira's NXM_NX_* fields (registers among them)
	OXMClassOpenFlowBasic uint16 = 0x8000
	OXMClassPacketRegs    uint16 = 0x8001 // OpenFlow 1.5's 64-bit packet registers (xreg0-7)
	OXMClassExperimenter  uint16 = 0xffff
)
