package test

import (
	"encoding/binary"
	"fmt"
	"net"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"golang.org/x/sys/unix"

	"github.com/xswitch/xswitch/internal/testenv"
)

// Groups through the CLI, with real frames between namespaces: each
// test runs with the fast path on and off (XSWITCH_TEST_FAST_PATH).

// flowFrame is a UDP datagram from src to dst (the broadcast address, so
// that every namespace's packet socket sees it), from UDP port sport.
func flowFrame(t testing.TB, src net.HardwareAddr, sport uint16) []byte {
	t.Helper()
	eth := &layers.Ethernet{SrcMAC: src, DstMAC: layers.EthernetBroadcast, EthernetType: layers.EthernetTypeIPv4}
	ip := &layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolUDP,
		SrcIP: net.IPv4(10, 99, 0, 1), DstIP: net.IPv4(10, 99, 0, 2)}
	udp := &layers.UDP{SrcPort: layers.UDPPort(sport), DstPort: 9}
	if err := udp.SetNetworkLayerForChecksum(ip); err != nil {
		t.Fatal(err)
	}
	buf := gopacket.NewSerializeBuffer()
	opts := gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}
	if err := gopacket.SerializeLayers(buf, opts, eth, ip, udp, gopacket.Payload("group")); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// tally counts, by a key of each, the frames from one source address
// that arrive in a namespace, until done.
type tally struct {
	stop   chan struct{}
	counts chan map[int]int
}

// tallyFrames starts a tally of the UDP datagrams (over IPv4, without
// options) from src that arrive in namespace ns, by key(frame).
func tallyFrames(t testing.TB, ns string, src net.HardwareAddr, key func(frame []byte) int) *tally {
	t.Helper()
	fd := sniffSocket(t, ns)
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 16<<20); err != nil {
		t.Fatalf("SO_RCVBUFFORCE: %v", err)
	}
	a := &tally{stop: make(chan struct{}), counts: make(chan map[int]int, 1)}
	go func() {
		got := map[int]int{}
		buf, oob := make([]byte, 65536), make([]byte, 256)
		for {
			select {
			case <-a.stop:
				a.counts <- got
				return
			default:
			}
			f, ok, err := receiveFrame(fd, buf, oob)
			if err != nil {
				a.counts <- nil
				return
			}
			if ok && len(f.frame) >= 14+20+8 && net.HardwareAddr(f.frame[6:12]).String() == src.String() &&
				binary.BigEndian.Uint16(f.frame[12:]) == 0x0800 && f.frame[14] == 0x45 && f.frame[14+9] == 17 {
				got[key(f.frame)]++
			}
		}
	}()
	return a
}

// byUDPSource keys a frame by its UDP source port.
func byUDPSource(frame []byte) int { return int(binary.BigEndian.Uint16(frame[14+20:])) }

// byTOS keys a frame by its IPv4 TOS.
func byTOS(frame []byte) int { return int(frame[15]) }

func (a *tally) done(t testing.TB) map[int]int {
	t.Helper()
	close(a.stop)
	got := <-a.counts
	if got == nil {
		t.Fatal("reading the packet socket failed")
	}
	return got
}

// xswitchGroupStats reads xswitch dump-group-stats' counts of group id.
func xswitchGroupStats(t testing.TB, d *daemon, br string, id int) groupStats {
	t.Helper()
	out := d.x(t, "dump-group-stats", br, strconv.Itoa(id))
	g, ok := parseGroupStats(out)[id]
	if !ok {
		t.Fatalf("dump-group-stats %d: no counts in %q", id, out)
	}
	return g
}

// settle gives frames in flight time to arrive, and the fast path's
// sweeper time to count what the kernel carried (dump-group-stats syncs
// it anyway).
func settle() { time.Sleep(300 * time.Millisecond) }

// An all group sends one copy of each frame to each bucket's port, with
// each bucket's rewrite on its own copy, and counts the frames once per
// group and once per bucket.
func TestGroupAllSendsEachBucketItsCopy(t *testing.T) {
	testenv.RequireRoot(t)
	r := newRig(t, 3)
	d, br, p1, p2, p3 := r.d, r.br, r.hosts[0], r.hosts[1], r.hosts[2]
	d.x(t, "add-group", br, fmt.Sprintf("group_id=1,type=all,bucket=mod_nw_tos:32,output:%s,bucket=output:%s", p2.name, p3.name))
	d.x(t, "add-flow", br, fmt.Sprintf("priority=100,in_port=%s,udp,actions=group:1", p1.name))

	src := net.HardwareAddr{0x02, 0xaa, 0, 0, 0, 1}
	at2, at3 := tallyFrames(t, p2.ns, src, byUDPSource), tallyFrames(t, p3.ns, src, byUDPSource)
	tos2, tos3 := tallyFrames(t, p2.ns, src, byTOS), tallyFrames(t, p3.ns, src, byTOS)
	raw := openRaw(t, p1.ns, src)
	const frames = 50
	for i := range frames {
		raw.send(t, flowFrame(t, src, uint16(1000+i%5)))
	}
	settle()
	got2, got3 := at2.done(t), at3.done(t)
	for _, got := range []map[int]int{got2, got3} {
		total := 0
		for _, n := range got {
			total += n
		}
		if total != frames {
			t.Errorf("a bucket's port received %d frames, want each of the %d once: %v", total, frames, got)
		}
	}
	if tos := tos2.done(t); tos[32] != frames {
		t.Errorf("bucket 0's frames left with TOS %v, want all %d with its mod_nw_tos:32", tos, frames)
	}
	if tos := tos3.done(t); tos[0] != frames {
		t.Errorf("bucket 1's frames left with TOS %v, want all %d with 0: bucket 0's rewrite leaked into its copy", tos, frames)
	}
	if g := xswitchGroupStats(t, d, br, 1); g.packets != frames || fmt.Sprint(g.buckets) != fmt.Sprint([]int{frames, frames}) {
		t.Errorf("dump-group-stats: %d packets, buckets %v; want %d, [%d %d]", g.packets, g.buckets, frames, frames, frames)
	}

	// Groups are saved as rules are: a restart brings them back.
	groups, flows := d.x(t, "dump-groups", br), stripCounters(d.x(t, "dump-flows", br))
	d.stop(t, syscall.SIGTERM)
	d.start(t)
	if again := d.x(t, "dump-groups", br); again != groups {
		t.Errorf("dump-groups after a restart:\n%s\nbefore:\n%s", again, groups)
	}
	// Deleting a group deletes the rules that send to it.
	d.x(t, "del-groups", br, "group_id=1")
	if again := stripCounters(d.x(t, "dump-flows", br)); strings.Contains(again, "group:1") || !strings.Contains(flows, "group:1") {
		t.Errorf("dump-flows after del-groups still has the rule to the group:\n%s", again)
	}
	if out := d.x(t, "dump-groups", br); strings.TrimSpace(out) != "" {
		t.Errorf("dump-groups after del-groups: %q", out)
	}
}

// An indirect group is a next hop that rules share: the rules of three
// kinds of traffic send to it, and one mod-group moves them all to
// another port at once, its rewrite with them.
func TestGroupIndirectIsOneNextHop(t *testing.T) {
	testenv.RequireRoot(t)
	r := newRig(t, 3)
	d, br, p1, p2, p3 := r.d, r.br, r.hosts[0], r.hosts[1], r.hosts[2]
	d.x(t, "add-group", br, fmt.Sprintf("group_id=5,type=indirect,bucket=mod_nw_tos:8,output:%s", p2.name))
	for _, sport := range []int{1000, 1001, 1002} {
		d.x(t, "add-flow", br, fmt.Sprintf("priority=100,in_port=%s,udp,tp_src=%d,actions=group:5", p1.name, sport))
	}
	src := net.HardwareAddr{0x02, 0xaa, 0, 0, 0, 5}
	raw := openRaw(t, p1.ns, src)
	const frames = 30
	round := func(tos uint8) (at2, at3 int) {
		t.Helper()
		tally2, tally3 := tallyFrames(t, p2.ns, src, byTOS), tallyFrames(t, p3.ns, src, byTOS)
		for i := range frames {
			raw.send(t, flowFrame(t, src, uint16(1000+i%3)))
		}
		settle()
		got2, got3 := tally2.done(t), tally3.done(t)
		for _, got := range []map[int]int{got2, got3} {
			for key, n := range got {
				if key != int(tos) {
					t.Errorf("%d frames left with TOS %d, want %d (the bucket's mod_nw_tos)", n, key, tos)
				}
			}
		}
		return got2[int(tos)], got3[int(tos)]
	}
	if at2, at3 := round(8); at2 != frames || at3 != 0 {
		t.Errorf("through the indirect group to %s: %d frames there, %d at %s; want %d and 0", p2.name, at2, at3, p3.name, frames)
	}
	d.x(t, "mod-group", br, fmt.Sprintf("group_id=5,type=indirect,bucket=mod_nw_tos:16,output:%s", p3.name))
	if at2, at3 := round(16); at2 != 0 || at3 != frames {
		t.Errorf("after mod-group to %s: %d frames at %s, %d there; want 0 and %d", p3.name, at2, p2.name, at3, frames)
	}
	// A modified group's counters start over, as OVS's, whose modify
	// makes a new group (its creation time kept).
	if g := xswitchGroupStats(t, d, br, 5); g.packets != frames || fmt.Sprint(g.buckets) != fmt.Sprint([]int{frames}) {
		t.Errorf("dump-group-stats after mod-group: %d packets, buckets %v; want %d, [%d]", g.packets, g.buckets, frames, frames)
	}
}

// A select group spreads flows over its buckets by weight, each flow on
// one bucket; removing a bucket moves only the flows that took it.
func TestGroupSelectSpreadsFlowsByWeight(t *testing.T) {
	testenv.RequireRoot(t)
	r := newRig(t, 4)
	d, br, in := r.d, r.br, r.hosts[0]
	outs := r.hosts[1:]
	weights := []int{1, 2, 3}
	group := "group_id=7,type=select"
	for i, h := range outs {
		group += fmt.Sprintf(",bucket=bucket_id:%d,weight:%d,output:%s", i, weights[i], h.name)
	}
	d.x(t, "add-group", br, group)
	d.x(t, "add-flow", br, fmt.Sprintf("priority=100,in_port=%s,udp,actions=group:7", in.name))

	src := net.HardwareAddr{0x02, 0xaa, 0, 0, 0, 2}
	const flows = 1000
	send := func() []map[int]int {
		var at []*tally
		for _, h := range outs {
			at = append(at, tallyFrames(t, h.ns, src, byUDPSource))
		}
		raw := openRaw(t, in.ns, src)
		for round := range 2 { // each flow twice: it must take one bucket both times
			for i := range flows {
				raw.send(t, flowFrame(t, src, uint16(20000+i)))
				if i%100 == 99 {
					time.Sleep(5 * time.Millisecond) // let the receivers' sockets keep up
				}
			}
			_ = round
		}
		settle()
		var got []map[int]int
		for _, a := range at {
			got = append(got, a.done(t))
		}
		return got
	}
	got := send()
	where := map[int]int{}
	for b, ports := range got {
		for p, n := range ports {
			if n != 2 {
				t.Errorf("flow from UDP port %d reached bucket %d's port %d times, want both of its frames", p, b, n)
			}
			if prev, seen := where[p]; seen {
				t.Errorf("flow from UDP port %d reached bucket %d and bucket %d", p, prev, b)
			}
			where[p] = b
		}
	}
	if len(where) != flows {
		t.Fatalf("%d of %d flows arrived", len(where), flows)
	}
	// Chi-square of the flows per bucket against the weights: two degrees
	// of freedom, 13.82 at p = 0.001.
	counts := make([]int, len(outs))
	for _, b := range where {
		counts[b]++
	}
	chi2 := 0.0
	for i, n := range counts {
		expected := float64(flows*weights[i]) / 6
		chi2 += (float64(n) - expected) * (float64(n) - expected) / expected
	}
	t.Logf("flows per bucket %v for weights %v: chi-square %.2f", counts, weights, chi2)
	if chi2 > 13.82 {
		t.Errorf("flows per bucket %v do not follow weights %v: chi-square %.2f > 13.82", counts, weights, chi2)
	}
	if g := xswitchGroupStats(t, d, br, 7); fmt.Sprint(g.buckets) != fmt.Sprint([]int{2 * counts[0], 2 * counts[1], 2 * counts[2]}) {
		t.Errorf("dump-group-stats buckets %v, want twice the flows each port received %v", g.buckets, counts)
	}

	// Remove the last bucket: its flows move, the others' stay.
	d.x(t, "remove-buckets", br, "group_id=7,command_bucket_id=2")
	again := send()
	for b, ports := range again {
		for p := range ports {
			if was := where[p]; was != 2 && was != b {
				t.Errorf("flow from UDP port %d moved from bucket %d to bucket %d, though its bucket stayed", p, was, b)
			}
		}
	}
	if len(again[2]) != 0 {
		t.Errorf("%d flows still reach the removed bucket's port", len(again[2]))
	}
}

// A fast failover group sends to its first live bucket: when the port it
// watches loses its link, frames go to the next bucket's port, and back
// when the link returns.
func TestGroupFastFailoverFollowsTheLink(t *testing.T) {
	testenv.RequireRoot(t)
	r := newRig(t, 3)
	d, br, p1, p2, p3 := r.d, r.br, r.hosts[0], r.hosts[1], r.hosts[2]
	d.x(t, "add-group", br, fmt.Sprintf("group_id=3,type=ff,bucket=watch_port:%s,output:%s,bucket=watch_port:%s,output:%s",
		p2.name, p2.name, p3.name, p3.name))
	d.x(t, "add-flow", br, fmt.Sprintf("priority=100,in_port=%s,udp,actions=group:3", p1.name))
	src := net.HardwareAddr{0x02, 0xaa, 0, 0, 0, 3}
	raw := openRaw(t, p1.ns, src)

	// firstAt sends a frame every 2 ms until one reaches namespace ns, and
	// says how long that took.
	firstAt := func(ns string) time.Duration {
		c := startCounting(t, ns, src)
		start := time.Now()
		for time.Since(start) < 5*time.Second {
			raw.send(t, flowFrame(t, src, 4000))
			time.Sleep(2 * time.Millisecond)
			if n := c.peek(); n > 0 {
				c.count(t)
				return time.Since(start)
			}
		}
		c.count(t)
		t.Fatalf("no frame reached %s within 5 s", ns)
		return 0
	}
	firstAt(p2.ns)
	mustRun(t, "ip", "-n", p2.ns, "link", "set", "eth0", "down")
	took := firstAt(p3.ns)
	t.Logf("frames reached bucket 1's port %v after bucket 0's link went down", took)
	mustRun(t, "ip", "-n", p2.ns, "link", "set", "eth0", "up")
	back := firstAt(p2.ns)
	t.Logf("frames reached bucket 0's port again %v after its link came back", back)
	out := d.x(t, "trace", br, fmt.Sprintf("in_port=%s,udp", p1.name))
	if !strings.Contains(out, "type fast failover: bucket 0, the first live one") {
		t.Errorf("trace does not say which bucket the group chose:\n%s", out)
	}
}
