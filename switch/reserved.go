package vswitch

// Reserved group addresses. IEEE 802.1D (clause 7.12.6) reserves
// 01:80:c2:00:00:00 to 0f for protocols between a station and the bridge it
// is attached to: STP, PAUSE, LACP and the other slow protocols, 802.1X
// (EAPOL), LLDP. A bridge consumes such frames or drops them; flooding them
// would, for instance, let one station's PAUSE frames stop every other
// link. NORMAL drops them unless the bridge's forward-bpdu option says
// otherwise, and, as in OVS, also the addresses of Extreme's and Cisco's
// link-local protocols: the list is OVS's eth_addr_is_reserved. OpenFlow
// actions (output, FLOOD, ALL) send what the rule says, as in OVS.

// IsReserved reports whether mac is a group address that NORMAL drops
// unless the bridge forwards BPDUs. The forwarder and trace share it.
func IsReserved(mac [6]byte) bool { return isReserved(mac[:]) }

func isReserved(mac []byte) bool {
	_ = mac[5]
	a := uint64(mac[0])<<40 | uint64(mac[1])<<32 | uint64(mac[2])<<24 |
		uint64(mac[3])<<16 | uint64(mac[4])<<8 | uint64(mac[5])
	switch {
	case a&^0xf == 0x0180c2000000: // IEEE 802.1D
		return true
	case a&^0x7 == 0x01000cccccc0: // Cisco CFM
		return true
	}
	switch a {
	case 0x00e02b000000, // Extreme EDP
		0x00e02b000004, 0x00e02b000006, // Extreme EAPS
		0x01000c000000, // Cisco ISL
		0x01000ccccccc, // Cisco PAgP, UDLD, CDP, DTP, VTP
		0x01000ccccccd, // Cisco PVST+
		0x01000ccdcdcd: // Cisco STP Uplink Fast, FlexLink
		return true
	}
	return false
}

// SetForwardBPDU makes NORMAL forward frames to reserved group addresses
// (on) or drop and count them (off, the default), as OVS's
// other_config:forward-bpdu does. It takes effect from the next batch.
func (b *Bridge) SetForwardBPDU(on bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.onEachForwarder(func(f *forwarder) { f.setForwardBPDU(on) })
}

func (f *forwarder) setForwardBPDU(on bool) {
	f.forwardBPDU = on
	f.forgetDecisions() // they flood such frames, or leave them to NORMAL to drop
}
