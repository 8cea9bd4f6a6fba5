package bpf

import (
	"encoding/binary"
	"net"
	"testing"
	"time"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"golang.org/x/sys/unix"

	"github.com/xswitch/xswitch/flow"
	"github.com/xswitch/xswitch/header"
)

// The meters map is as large as flow says a bridge's meters are, its
// slots as the Go type says, so that user space's pointers into its
// memory are the program's words.
func TestMeterMapLayout(t *testing.T) {
	spec, err := LoadFastpath()
	if err != nil {
		t.Fatal(err)
	}
	m := spec.Maps[FastpathMapMeters]
	if m.MaxEntries != flow.MaxMeters || m.ValueSize != uint32(unsafe.Sizeof(FastpathFpMeter{})) {
		t.Errorf("meters: %d slots of %d bytes; want %d of %d", m.MaxEntries, m.ValueSize, flow.MaxMeters, unsafe.Sizeof(FastpathFpMeter{}))
	}
	if len(FastpathFpMeter{}.Bands) != flow.MaxMeterBands {
		t.Errorf("a meter's slot has %d bands; flow says %d", len(FastpathFpMeter{}.Bands), flow.MaxMeterBands)
	}
}

func monotonicNow(tb testing.TB) uint64 {
	tb.Helper()
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		tb.Fatal(err)
	}
	return uint64(ts.Nano())
}

const (
	meterSlot = 5
	meterID   = 77
	hour      = uint64(time.Hour)
)

// meterFrame is a UDP frame over IPv4 or IPv6 whose DSCP is AF11, of
// drop precedence 1.
func meterFrame(tb testing.TB, ipv6 bool) []byte {
	eth := &layers.Ethernet{SrcMAC: net.HardwareAddr{2, 0, 0, 0, 0, 1}, DstMAC: net.HardwareAddr{2, 0, 0, 0, 0, 2}, EthernetType: layers.EthernetTypeIPv4}
	udp := &layers.UDP{SrcPort: 5353, DstPort: 53}
	const af11 = 10 << 2
	if ipv6 {
		eth.EthernetType = layers.EthernetTypeIPv6
		ip := &layers.IPv6{Version: 6, HopLimit: 9, TrafficClass: af11 | 1, NextHeader: layers.IPProtocolUDP, FlowLabel: 0xabcde,
			SrcIP: net.ParseIP("fd00::1"), DstIP: net.ParseIP("fd00::2")}
		udp.SetNetworkLayerForChecksum(ip)
		return serialize(tb, eth, ip, udp, gopacket.Payload("meter me"))
	}
	ip := &layers.IPv4{Version: 4, TTL: 64, TOS: af11 | 1, Protocol: layers.IPProtocolUDP, SrcIP: net.IP{10, 0, 0, 1}, DstIP: net.IP{10, 0, 0, 2}}
	udp.SetNetworkLayerForChecksum(ip)
	return serialize(tb, eth, ip, udp, gopacket.Payload("meter me"))
}

// meterEntry is an entry that runs meter meterID, then sends the frame
// to slot 1 (the loopback).
func meterEntry(ip uint8) FastpathFpFlow {
	return *withOps(FastpathFpFlow{Out: 1},
		FastpathFpOp{Type: uint8(FastpathFpOpTypeFP_OP_METER), Tunnel: meterSlot, Delta: meterID, Len: ip})
}

func (r *runBridge) meterCounts(tb testing.TB) FastpathFpMeterCounts {
	tb.Helper()
	var c FastpathFpMeterCounts
	if err := r.shared.AddMeterCounts(meterSlot, &c); err != nil {
		tb.Fatal(err)
	}
	return c
}

// The band that applies is the one of the highest rate the frame
// exceeds, as OpenFlow says: a drop band drops it, a dscp_remark band
// raises its drop precedence (the IPv4 checksum still right), none lets
// it be. A frame not dropped takes its cost from the bands it does not
// exceed, and from no other. Each band's theoretical arrival time is set
// by hand an hour ahead of now (exceeded) or at 0 (not), so the real
// clock cannot change what the test sees. Band i remarks by i+1 levels.
func TestMeterAppliesTheHighestExceededBand(t *testing.T) {
	const drop, remark = uint8(FastpathFpBandTypeFP_BAND_DROP), uint8(FastpathFpBandTypeFP_BAND_DSCP_REMARK)
	type band struct {
		typ      uint8
		rate     uint32
		exceeded bool
	}
	for _, c := range []struct {
		name      string
		ipv6      bool
		bands     []band
		dropped   bool
		applied   int   // -1: none
		dscp      uint8 // what the frame leaves with
		takesCost []bool
	}{
		{"under its rate", false, []band{{drop, 1000, false}}, false, -1, 10, []bool{true}},
		{"over its rate", false, []band{{drop, 1000, true}}, true, 0, 10, []bool{false}},
		{"remarked", false, []band{{remark, 1000, true}}, false, 0, 12, []bool{false}},
		{"remarked over IPv6", true, []band{{remark, 1000, true}}, false, 0, 12, []bool{false}},
		{"drop above remark, both exceeded", false, []band{{remark, 500, true}, {drop, 1000, true}}, true, 1, 10, []bool{false, false}},
		{"remark above drop, both exceeded", false, []band{{drop, 500, true}, {remark, 1000, true}}, false, 1, 14, []bool{false, false}},
		{"remark exceeded, drop above not", false, []band{{remark, 500, true}, {drop, 1000, false}}, false, 0, 12, []bool{false, true}},
		{"the higher of two remarks", false, []band{{remark, 300, true}, {remark, 900, true}, {drop, 2000, false}}, false, 1, 14, []bool{false, false, true}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := loadRunBridge(t)
			if err := r.shared.TxPorts.Put(uint32(1), uint32(1)); err != nil { // lo
				t.Fatal(err)
			}
			fr := meterFrame(t, c.ipv6)
			ip := uint8(4)
			if c.ipv6 {
				ip = 6
			}
			r.install(t, fr, meterEntry(ip))
			m := &r.shared.MeterSlots()[meterSlot]
			*m = FastpathFpMeter{Id: meterID, Pktps: 1, N_bands: uint8(len(c.bands))}
			now := monotonicNow(t)
			for i, b := range c.bands {
				m.Bands[i] = FastpathFpBand{Type: b.typ, Rate: b.rate, Tolerance: uint64(time.Millisecond), PrecLevel: uint8(i + 1)}
				if b.exceeded {
					m.Bands[i].Tat = now + hour
				}
			}
			out := make([]byte, len(fr))
			opts := &ebpf.RunOptions{Data: fr, DataOut: out}
			ret, err := r.objs.Fastpath.Run(opts)
			if err != nil {
				t.Fatal(err)
			}
			after := monotonicNow(t)
			if want := map[bool]uint32{true: xdpDrop, false: xdpRedirect}[c.dropped]; ret != want {
				t.Fatalf("action %d, want %d", ret, want)
			}
			if got := r.shared.DropCounts()["meter"]; got != map[bool]uint64{true: 1}[c.dropped] {
				t.Errorf("meter drops %d", got)
			}
			counts := r.meterCounts(t)
			if counts.Packets != 1 || counts.Bytes != uint64(len(fr)) {
				t.Errorf("the meter counted %d frames, %d bytes; want 1, %d", counts.Packets, counts.Bytes, len(fr))
			}
			for i := range c.bands {
				want := uint64(0)
				if i == c.applied {
					want = 1
				}
				if counts.BandPackets[i] != want || counts.BandBytes[i] != want*uint64(len(fr)) {
					t.Errorf("band %d counted %d frames, %d bytes; want %d", i, counts.BandPackets[i], counts.BandBytes[i], want)
				}
				tat, rate := m.Bands[i].Tat, c.bands[i].rate
				cost := uint64(time.Second) / uint64(rate)
				switch {
				case c.bands[i].exceeded && tat != now+hour:
					t.Errorf("band %d, exceeded, moved its time from now+1h to now%+d", i, int64(tat-now-hour))
				case c.takesCost[i] && (tat < now+cost || tat > after+cost):
					t.Errorf("band %d's time is now%+d; want the frame's cost (%d ns) after the run", i, int64(tat-now), cost)
				case !c.bands[i].exceeded && !c.takesCost[i] && tat != 0:
					t.Errorf("band %d took the cost of a frame that was dropped", i)
				}
			}
			if c.dropped {
				return
			}
			if got := dscpOf(out, c.ipv6); got != c.dscp {
				t.Errorf("the frame left with DSCP %d, want %d", got, c.dscp)
			}
			if c.ipv6 {
				if binary.BigEndian.Uint32(out[14:])&0xf00fffff != binary.BigEndian.Uint32(fr[14:])&0xf00fffff || out[15]&0x30 != fr[15]&0x30 {
					t.Errorf("the remark changed more than the DSCP's drop precedence: %x, was %x", out[14:18], fr[14:18])
				}
				return
			}
			if !header.IPv4(out[14:]).ChecksumValid() || out[15]&3 != fr[15]&3 {
				t.Errorf("after the remark the IPv4 header %x: its checksum does not hold, or ECN %d is not %d", out[14:34], out[15]&3, fr[15]&3)
			}
		})
	}
}

func dscpOf(frame []byte, ipv6 bool) uint8 {
	if ipv6 {
		return uint8(binary.BigEndian.Uint16(frame[14:])>>4) >> 2
	}
	return frame[15] >> 2
}

// A slot that holds another meter than the entry's (its own deleted, the
// slot taken since) meters nothing and counts nothing.
func TestMeterOfAnotherIDMetersNothing(t *testing.T) {
	r := loadRunBridge(t)
	if err := r.shared.TxPorts.Put(uint32(1), uint32(1)); err != nil {
		t.Fatal(err)
	}
	fr := meterFrame(t, false)
	r.install(t, fr, meterEntry(4))
	m := &r.shared.MeterSlots()[meterSlot]
	*m = FastpathFpMeter{Id: meterID + 1, Pktps: 1, N_bands: 1}
	m.Bands[0] = FastpathFpBand{Type: uint8(FastpathFpBandTypeFP_BAND_DROP), Rate: 1, Tat: monotonicNow(t) + hour}
	if ret, err := r.objs.Fastpath.Run(&ebpf.RunOptions{Data: fr}); err != nil || ret != xdpRedirect {
		t.Fatalf("action %d (%v), want a redirect", ret, err)
	}
	if c := r.meterCounts(t); c.Packets != 0 {
		t.Errorf("the other meter counted %d frames", c.Packets)
	}
}

// Run back to back under BPF_PROG_RUN, as fast as the CPU runs the
// program (millions a second, for most of a second), frames through a
// meter pass at its rate over the run's time, within 10% (plus the
// burst), and the band counts every frame the program dropped.
func TestMeterHoldsItsRateUnderBPFProgRun(t *testing.T) {
	for _, c := range []struct {
		name  string
		pktps bool
		rate  uint32
	}{{"pktps", true, 20000}, {"kbps", false, 20000}} {
		t.Run(c.name, func(t *testing.T) {
			r := loadRunBridge(t)
			fr := meterFrame(t, false)
			r.install(t, fr, *withOps(FastpathFpFlow{Out: FPDrop},
				FastpathFpOp{Type: uint8(FastpathFpOpTypeFP_OP_METER), Tunnel: meterSlot, Delta: meterID, Len: 4}))
			m := &r.shared.MeterSlots()[meterSlot]
			*m = FastpathFpMeter{Id: meterID, N_bands: 1}
			if c.pktps {
				m.Pktps = 1
			}
			// Long enough that a pause of the run (the machine is shared)
			// loses none of the budget, as the switch's default is.
			const burst = 50 * time.Millisecond
			m.Bands[0] = FastpathFpBand{Type: uint8(FastpathFpBandTypeFP_BAND_DROP), Rate: c.rate, Tolerance: uint64(burst)}
			const runs = 1 << 22
			start := time.Now()
			if _, _, err := r.objs.Fastpath.Benchmark(fr, runs, nil); err != nil {
				t.Fatal(err)
			}
			elapsed := time.Since(start)
			counts := r.meterCounts(t)
			passed := counts.Packets - counts.BandPackets[0]
			perSecond := float64(c.rate)
			if !c.pktps {
				perSecond = float64(c.rate) * 1000 / 8 / float64(len(fr))
			}
			want := perSecond * (elapsed + burst).Seconds()
			t.Logf("%d frames in %v, %d passed; at %d %s, want %.0f", counts.Packets, elapsed, passed, c.rate, c.name, want)
			if counts.Packets != runs {
				t.Fatalf("the meter counted %d frames of %d", counts.Packets, runs)
			}
			// Never more than the rate (and the burst): the meter's promise.
			// Less is the machine's doing when the run itself pauses longer
			// than the burst (another test's load), which the budget does
			// not keep: only half is asked for, the namespace tests measure
			// the rate within 10%.
			if float64(passed) < 0.5*perSecond*elapsed.Seconds()-1 || float64(passed) > 1.1*want+1 {
				t.Errorf("%d frames passed in %v; want at most %.0f + 10%%, and at least half", passed, elapsed, want)
			}
			if drops := r.shared.DropCounts(); drops["meter"] != counts.BandPackets[0] || drops["rule"] != passed {
				t.Errorf("drops %v; want %d meter drops (the band's count), %d rule drops (the rest)", drops, counts.BandPackets[0], passed)
			}
		})
	}
}
