package vswitch

import (
	"math/rand/v2"
	"net"
	"testing"
)

// reservedList is OVS's eth_addr_is_reserved table, written out: the
// obvious form that isReserved must agree with.
var reservedList = func() map[[6]byte]bool {
	set := map[[6]byte]bool{}
	add := func(s string) {
		m, err := net.ParseMAC(s)
		if err != nil {
			panic(err)
		}
		set[[6]byte(m)] = true
	}
	for i := range 16 {
		add(net.HardwareAddr{0x01, 0x80, 0xc2, 0, 0, byte(i)}.String())
	}
	for _, s := range []string{
		"00:e0:2b:00:00:00", "00:e0:2b:00:00:04", "00:e0:2b:00:00:06",
		"01:00:0c:00:00:00", "01:00:0c:cc:cc:cc", "01:00:0c:cc:cc:cd", "01:00:0c:cd:cd:cd",
	} {
		add(s)
	}
	for i := range 8 {
		add(net.HardwareAddr{0x01, 0x00, 0x0c, 0xcc, 0xcc, 0xc0 + byte(i)}.String())
	}
	return set
}()

func TestIsReservedMatchesOVSList(t *testing.T) {
	for m := range reservedList {
		if !IsReserved(m) {
			t.Errorf("%s is reserved in OVS; IsReserved says no", net.HardwareAddr(m[:]))
		}
	}
	// Neighbours of every listed address, and random ones: reserved only
	// if listed.
	var candidates [][6]byte
	for m := range reservedList {
		for b := range 6 {
			for _, d := range []byte{1, 0x10, 0x80} {
				n := m
				n[b] ^= d
				candidates = append(candidates, n)
			}
		}
	}
	for range 100000 {
		var m [6]byte
		for i := range m {
			m[i] = byte(rand.IntN(256))
		}
		candidates = append(candidates, m)
	}
	for _, m := range candidates {
		if IsReserved(m) != reservedList[m] {
			t.Errorf("IsReserved(%s) = %v; the list says %v", net.HardwareAddr(m[:]), IsReserved(m), reservedList[m])
		}
	}
}

// TestNormalDropsReservedFramesAndCountsThem sends a frame to each
// reserved address of IEEE 802.1D (STP, PAUSE, LACP, EAPOL, LLDP, ...),
// which must go nowhere, and to addresses just outside, which flood.
func TestNormalDropsReservedFramesAndCountsThem(t *testing.T) {
	ports := newPorts(3)
	f := testForwarder(t, 64, ports...)
	var reserved [][]byte
	for last := range byte(16) {
		reserved = append(reserved, frame([]byte{0x01, 0x80, 0xc2, 0, 0, last}, mac(1), "reserved"))
	}
	reserved = append(reserved, frame([]byte{0x01, 0x00, 0x0c, 0xcc, 0xcc, 0xcc}, mac(1), "CDP"))
	notReserved := frame([]byte{0x01, 0x80, 0xc2, 0, 0, 0x10}, mac(1), "all bridges")
	send(f, ports, 0, append(reserved, notReserved)...)
	wantFrames(t, ports[1], notReserved)
	wantFrames(t, ports[2], notReserved)
	if got := f.ports[0].counters.dropped[dropReserved].Load(); got != uint64(len(reserved)) {
		t.Errorf("rx reserved drops = %d; want %d", got, len(reserved))
	}
	if got := f.ports[0].counters.dropped[dropVLAN].Load(); got != 0 {
		t.Errorf("rx VLAN drops = %d; want 0", got)
	}
}

func TestForwardBPDUFloodsReservedFrames(t *testing.T) {
	ports := newPorts(3)
	f := testForwarder(t, 64, ports...)
	f.setForwardBPDU(true)
	lldp := frame([]byte{0x01, 0x80, 0xc2, 0, 0, 0x0e}, mac(1), "LLDP")
	send(f, ports, 0, lldp)
	wantFrames(t, ports[1], lldp)
	wantFrames(t, ports[2], lldp)
	if got := f.ports[0].counters.dropped[dropReserved].Load(); got != 0 {
		t.Errorf("rx reserved drops = %d with forward-bpdu; want 0", got)
	}
}

// TestForwardBPDUOffStopsCachedFloods: turning forward-bpdu off reaches
// the flows whose decisions flooded reserved frames.
func TestForwardBPDUOffStopsCachedFloods(t *testing.T) {
	ports := newPorts(2)
	f := testForwarder(t, 64, ports...)
	f.setForwardBPDU(true)
	lldp := frame([]byte{0x01, 0x80, 0xc2, 0, 0, 0x0e}, mac(1), "LLDP")
	send(f, ports, 0, lldp)
	wantFrames(t, ports[1], lldp)
	f.setForwardBPDU(false)
	send(f, ports, 0, lldp)
	wantFrames(t, ports[1])
	if got := f.ports[0].counters.dropped[dropReserved].Load(); got != 1 {
		t.Errorf("rx reserved drops = %d after forward-bpdu went off; want 1", got)
	}
}

// TestOpenFlowActionsSendReservedFrames: only NORMAL considers reserved
// addresses, as in OVS; a rule's output and FLOOD send what they are told.
func TestOpenFlowActionsSendReservedFrames(t *testing.T) {
	ports := newPorts(3)
	f := testForwarder(t, 64, ports...)
	f.flows.Publish(rules(t, "priority=10,in_port=1,actions=output:2", "priority=10,in_port=2,actions=FLOOD"))
	stp := frame([]byte{0x01, 0x80, 0xc2, 0, 0, 0}, mac(1), "STP")
	send(f, ports, 0, stp)
	wantFrames(t, ports[1], stp)
	wantFrames(t, ports[2])
	send(f, ports, 1, stp)
	wantFrames(t, ports[0], stp)
	wantFrames(t, ports[2], stp)
}
