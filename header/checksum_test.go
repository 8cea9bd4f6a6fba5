package header

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"math/rand/v2"
	"testing"

	"github.com/xswitch/xswitch/internal/race"
)

// naiveSum is RFC 1071's sum as the RFC writes it: every 16-bit word
// added in a wide accumulator, an odd byte padded with a zero.
func naiveSum(initial uint32, b []byte) uint64 {
	s := uint64(initial)
	for i := 0; i < len(b); i += 2 {
		w := uint64(b[i]) << 8
		if i+1 < len(b) {
			w |= uint64(b[i+1])
		}
		s += w
	}
	return s
}

// naiveFold folds with end-around carries until 16 bits are left.
func naiveFold(s uint64) uint16 {
	for s > 0xffff {
		s = s>>16 + s&0xffff
	}
	return uint16(s)
}

func TestSumRFC1071Example(t *testing.T) {
	// RFC 1071 section 3: the sum of these bytes is 2ddf0, folded ddf2.
	b := []byte{0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7}
	if got := Sum(0, b); got != 0x2ddf0 {
		t.Errorf("Sum = %#x, want 0x2ddf0", got)
	}
	if got := Fold(Sum(0, b)); got != 0xddf2 {
		t.Errorf("Fold(Sum) = %#x, want 0xddf2", got)
	}
	if got := Checksum(0, b); got != 0x220d {
		t.Errorf("Checksum = %#x, want 0x220d", got)
	}
	// The sum does not depend on the byte order of the machine, nor on
	// where the words are cut: pieces of even length add up.
	if got := Sum(Sum(0, b[:2]), b[2:]); got != 0x2ddf0 {
		t.Errorf("Sum in two pieces = %#x, want 0x2ddf0", got)
	}
}

func TestSumOddLength(t *testing.T) {
	if got := Sum(0, []byte{0xab}); got != 0xab00 {
		t.Errorf("Sum(ab) = %#x, want 0xab00", got)
	}
	if got := Sum(0, []byte{1, 2, 3}); got != 0x0102+0x0300 {
		t.Errorf("Sum(01 02 03) = %#x, want %#x", got, 0x0102+0x0300)
	}
}

// TestSumMatchesNaive checks Sum against the slow obvious sum: equal while
// the sum fits 32 bits, equal once folded beyond.
func TestSumMatchesNaive(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		b := make([]byte, r.IntN(3000))
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		initial := r.Uint32() >> r.IntN(33)
		want := naiveSum(initial, b)
		got := Sum(initial, b)
		if want < 1<<32 && uint64(got) != want {
			t.Fatalf("Sum(%#x, %d bytes) = %#x, want %#x", initial, len(b), got, want)
		}
		if Fold(got) != naiveFold(want) {
			t.Fatalf("Fold(Sum(%#x, %d bytes)) = %#x, want %#x", initial, len(b), Fold(got), naiveFold(want))
		}
	}
	// Longer than a uint32 of 16-bit words holds.
	long := bytes.Repeat([]byte{0xff, 0xfe, 0xfd}, 1<<18)
	if got, want := Fold(Sum(^uint32(0), long)), naiveFold(naiveSum(^uint32(0), long)); got != want {
		t.Errorf("Fold(Sum) of 768 KiB = %#x, want %#x", got, want)
	}
}

func TestFoldAnyUint32(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, s := range []uint32{0, 1, 0xffff, 0x10000, 0x1fffe, 0xffff0000, 0xffffffff} {
		if got, want := Fold(s), naiveFold(uint64(s)); got != want {
			t.Errorf("Fold(%#x) = %#x, want %#x", s, got, want)
		}
	}
	for range 100000 {
		s := r.Uint32()
		if got, want := Fold(s), naiveFold(uint64(s)); got != want {
			t.Fatalf("Fold(%#x) = %#x, want %#x", s, got, want)
		}
	}
}

func TestUpdateRFC1624Example(t *testing.T) {
	// RFC 1624 section 4: a word 5555 becomes 3285 under checksum dd2f.
	// Equation 3 gives 0000, as a recomputation does; RFC 1141's
	// equation gave ffff.
	if got := Update(0xdd2f, Delta16(0x5555, 0x3285)); got != 0x0000 {
		t.Errorf("Update = %#04x, want 0x0000", got)
	}
}

// checkUpdate changes the words of data at the even offsets in offs to
// the values in words, updating the checksum at csumOff incrementally, and
// compares the result with a recomputation from scratch.
func checkUpdate(t *testing.T, data []byte, csumOff int, offs []int, words []uint16) {
	t.Helper()
	binary.BigEndian.PutUint16(data[csumOff:], 0)
	binary.BigEndian.PutUint16(data[csumOff:], Checksum(0, data))
	var delta uint32
	for i, off := range offs {
		delta += Delta16(binary.BigEndian.Uint16(data[off:]), words[i])
		binary.BigEndian.PutUint16(data[off:], words[i])
	}
	got := Update(binary.BigEndian.Uint16(data[csumOff:]), delta)
	binary.BigEndian.PutUint16(data[csumOff:], 0)
	if naiveSum(0, data) == 0 {
		return // all zeros: the one case where the forms differ (RFC 1624 section 3)
	}
	if want := Checksum(0, data); got != want {
		t.Fatalf("%x: incremental checksum %#04x, recomputed %#04x", data, got, want)
	}
}

// TestUpdateMatchesRecompute changes random words of random headers and
// checks the incremental update against a recomputation: every checksum
// value, 0 and ffff included, comes up over the runs.
func TestUpdateMatchesRecompute(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for range 200000 {
		data := make([]byte, 2*(2+r.IntN(30)))
		for i := range data {
			data[i] = byte(r.Uint32())
		}
		// Sparse data reaches the sums near 0 and ffff.
		if r.IntN(4) == 0 {
			for i := range data {
				if r.IntN(4) != 0 {
					data[i] = 0
				}
			}
		}
		csumOff := 2 * r.IntN(len(data)/2)
		var offs []int
		var words []uint16
		for range 1 + r.IntN(4) {
			off := 2 * r.IntN(len(data)/2)
			if off == csumOff {
				continue
			}
			offs, words = append(offs, off), append(words, uint16(r.Uint32()))
		}
		checkUpdate(t, data, csumOff, offs, words)
	}
}

func TestDelta32(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for range 10000 {
		old, updated := r.Uint32(), r.Uint32()
		want := Delta16(uint16(old>>16), uint16(updated>>16)) + Delta16(uint16(old), uint16(updated))
		if got := Delta32(old, updated); got != want {
			t.Fatalf("Delta32(%#x, %#x) = %#x, want %#x", old, updated, got, want)
		}
		data := []byte{0x45, 0, 0, 0, 0, 0, 0, 0}
		binary.BigEndian.PutUint32(data[4:], old)
		binary.BigEndian.PutUint16(data[2:], Checksum(0, data))
		binary.BigEndian.PutUint32(data[4:], updated)
		updateAt(data[2:], Delta32(old, updated))
		if Fold(Sum(0, data)) != 0xffff {
			t.Fatalf("%x: checksum does not hold after a 32-bit change", data)
		}
	}
}

func FuzzUpdate(f *testing.F) {
	f.Add([]byte{0x45, 0, 0, 20, 0, 0, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2}, uint8(10), uint8(12), uint16(0x0a09))
	f.Add([]byte{0xff, 0xff, 0, 0}, uint8(2), uint8(0), uint16(0))
	f.Fuzz(func(t *testing.T, data []byte, csum, at uint8, word uint16) {
		if len(data) < 4 {
			return
		}
		data = bytes.Clone(data[:len(data)&^1])
		words := len(data) / 2
		csumOff, off := 2*(int(csum)%words), 2*(int(at)%words)
		if off == csumOff {
			return
		}
		checkUpdate(t, data, csumOff, []int{off}, []uint16{word})
	})
}

func TestNoAllocations(t *testing.T) {
	if race.Enabled {
		t.Skip("the race detector allocates")
	}
	frame := make([]byte, 64)
	ip := IPv4(frame[EthernetLen:])
	frame[EthernetLen] = IPv4VersionIHL
	ip.SetChecksum(ip.ComputeChecksum())
	udp := UDP(frame[EthernetLen+IPv4MinLen:])
	udp.SetChecksum(1)
	addrs := [2][4]byte{{10, 0, 0, 1}, {10, 0, 0, 9}}
	i := 0
	allocs := testing.AllocsPerRun(100, func() {
		i++
		old, updated := ip.Dst(), addrs[i&1]
		delta := Delta32(binary.BigEndian.Uint32(old[:]), binary.BigEndian.Uint32(updated[:]))
		ip.SetDst(updated)
		ip.UpdateChecksum(delta)
		udp.UpdateChecksum(delta)
		TCP(udp).UpdateChecksum(delta)
		ICMP(udp).UpdateChecksum(delta)
		if !ip.ChecksumValid() {
			t.Fatal("checksum broken")
		}
	})
	if allocs != 0 {
		t.Errorf("checksums allocate %v times per run, want 0", allocs)
	}
}

var sink uint32

func BenchmarkSum(b *testing.B) {
	for _, n := range []int{IPv4MinLen, 1500} {
		data := make([]byte, n)
		for i := range data {
			data[i] = byte(i)
		}
		b.Run(map[int]string{IPv4MinLen: "20B", 1500: "1500B"}[n], func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(n))
			for b.Loop() {
				sink += Sum(0, data)
			}
		})
	}
}

// BenchmarkUpdate is what rewriting an IPv4 address costs the checksums:
// the header's and a UDP segment's.
func BenchmarkUpdate(b *testing.B) {
	frame := make([]byte, 64)
	ip := IPv4(frame[EthernetLen:])
	udp := UDP(frame[EthernetLen+IPv4MinLen:])
	udp.SetChecksum(0x1234)
	addrs := [2]uint32{0x0a000001, 0x0a090909}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		delta := Delta32(addrs[i&1], addrs[^i&1])
		ip.UpdateChecksum(delta)
		udp.UpdateChecksum(delta)
	}
}

// TestICMPChecksumOfAZeroMessage: an echo request of identifier,
// sequence and data 0 turned into a reply is a message of all zeros,
// whose checksum is 0xffff (a full sum's), not the 0 RFC 1624's update
// gives; an ICMPv6 message's covers a pseudo-header and keeps RFC 1624's.
func TestICMPChecksumOfAZeroMessage(t *testing.T) {
	msg := ICMP{8, 0, 0, 0, 0, 0, 0, 0}
	binary.BigEndian.PutUint16(msg[ICMPChecksumOffset:], ^uint16(0x0800))
	msg.UpdateChecksum(Delta16(0x0800, 0x0000))
	msg[0] = 0
	if c := binary.BigEndian.Uint16(msg[ICMPChecksumOffset:]); c != 0xffff {
		t.Fatalf("the all-zero echo reply's checksum is %#04x, want 0xffff", c)
	}
	v6 := ICMP{128, 0, 0x12, 0x34, 0, 0, 0, 0}
	v6.UpdatePseudoChecksum(Delta16(0x8000, 0x8100))
	if c := binary.BigEndian.Uint16(v6[ICMPChecksumOffset:]); c != Update(0x1234, Delta16(0x8000, 0x8100)) {
		t.Fatalf("ICMPv6's checksum is %#04x, want RFC 1624's update", c)
	}
}

// TestSCTPRewrite: a rewrite changes the CRC32c by its difference, so a
// right one stays right and a wrong one stays as wrong.
func TestSCTPRewrite(t *testing.T) {
	crc := func(b SCTP) uint32 {
		c := bytes.Clone(b)
		clear(c[SCTPChecksumOffset : SCTPChecksumOffset+4])
		return crc32.Checksum(c, crc32.MakeTable(crc32.Castagnoli))
	}
	packet := SCTP(append(make([]byte, SCTPLen), "a chunk of data"...))
	binary.BigEndian.PutUint16(packet[SrcPortOffset:], 1000)
	for _, wrong := range []uint32{0, 0xdeadbeef} {
		binary.LittleEndian.PutUint32(packet[SCTPChecksumOffset:], crc(packet)^wrong)
		packet.Rewrite(func() { binary.BigEndian.PutUint16(packet[SrcPortOffset:], 2000+uint16(wrong&1)) })
		if got := binary.LittleEndian.Uint32(packet[SCTPChecksumOffset:]); got != crc(packet)^wrong {
			t.Errorf("after the rewrite the checksum is %#x, want %#x (off by %#x as before)", got, crc(packet)^wrong, wrong)
		}
	}
}
