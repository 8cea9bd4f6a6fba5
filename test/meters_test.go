package test

import (
	"encoding/json"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/xswitch/xswitch/internal/netns"
	"github.com/xswitch/xswitch/internal/testenv"
)

// Meters through the CLI, with iperf3's UDP between namespaces, the fast
// path on and off (XSWITCH_TEST_FAST_PATH).

// ethMAC is the address of eth0 in namespace ns.
func ethMAC(t testing.TB, ns string) net.HardwareAddr {
	t.Helper()
	var mac net.HardwareAddr
	if err := netns.Do(ns, func() error {
		ifi, err := net.InterfaceByName("eth0")
		if err == nil {
			mac = ifi.HardwareAddr
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return mac
}

// iperfUDP sends UDP from namespace client to server's address for
// seconds, datagrams of payload bytes at bitrate with TOS tos, and
// returns how long iperf3 says it sent.
func iperfUDP(t testing.TB, client, server nsPort, seconds, payload int, bitrate string, tos int) time.Duration {
	t.Helper()
	port := strconv.Itoa(15201 + time.Now().Nanosecond()%1000)
	startBackground(t, "ip", "netns", "exec", server.ns, "iperf3", "--server", "--one-off", "--port", port)
	type iperfReport struct {
		Error string `json:"error"`
		End   struct {
			Sum struct {
				Seconds float64 `json:"seconds"`
				Packets int     `json:"packets"`
			} `json:"sum"`
		} `json:"end"`
	}
	var r result
	var report iperfReport
	for range 50 { // until the server listens: iperf3 may say so in its report, exit status 0
		r = run(t, "ip", "netns", "exec", client.ns, "iperf3", "--client", server.addr, "--port", port, "--udp", "--json",
			"--time", strconv.Itoa(seconds), "--length", strconv.Itoa(payload), "--bitrate", bitrate, "--tos", strconv.Itoa(tos))
		report = iperfReport{}
		if r.code == 0 && json.Unmarshal([]byte(r.stdout), &report) == nil && report.Error == "" {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if report.End.Sum.Packets == 0 {
		t.Fatalf("iperf3 sent nothing (exit %d):\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	return time.Duration(report.End.Sum.Seconds * float64(time.Second))
}

// meterStats reads meter-stats' JSON of meter 1: frames in, and each band's.
func meterStats(t testing.TB, d *daemon, br string) (in int, bands []int) {
	t.Helper()
	var out struct {
		Meters []struct {
			Packets int `json:"packet_in_count"`
			Bands   []struct {
				Packets int `json:"packet_count"`
			} `json:"bands"`
		} `json:"meters"`
	}
	if err := json.Unmarshal([]byte(d.x(t, "--format", "json", "meter-stats", br, "meter=1")), &out); err != nil || len(out.Meters) != 1 {
		t.Fatalf("meter-stats: %v, %+v", err, out)
	}
	for _, b := range out.Meters[0].Bands {
		bands = append(bands, b.Packets)
	}
	return out.Meters[0].Packets, bands
}

// A drop meter at a tenth of what iperf3 sends lets through its rate, in
// frames per second (pktps) and in bits (kbps), within 10% over the run;
// its band counts exactly the frames it dropped.
func TestMeterHoldsItsRate(t *testing.T) {
	testenv.RequireRoot(t)
	for _, c := range []struct {
		name, meter string
		payload     int // iperf3's datagrams: frames of payload+42 bytes
		bitrate     string
	}{
		// 1,000 frames/s of 10,000.
		{"pktps", "meter=1 pktps bands=type=drop rate=1000", 100, "8M"},
		// 8,000 kbit/s of frames of 1,000 bytes: 1,000 frames/s of 10,000.
		{"kbps", "meter=1 kbps bands=type=drop rate=8000", 958, "80M"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, 2)
			d, br, p1, p2 := r.d, r.br, r.hosts[0], r.hosts[1]
			d.x(t, "add-meter", br, c.meter)
			d.x(t, "add-flow", br, fmt.Sprintf("priority=100,in_port=%s,udp,actions=meter:1,output:%s", p1.name, p2.name))
			arrived := tallyFrames(t, p2.ns, ethMAC(t, p1.ns), byUDPSource)
			sent := iperfUDP(t, p1, p2, 3, c.payload, c.bitrate, 0)
			settle()
			total := 0
			for _, n := range arrived.done(t) {
				total += n
			}
			rate := float64(total) / sent.Seconds()
			t.Logf("%s: %d frames arrived in %v: %.0f frames/s for a meter of 1,000", c.meter, total, sent, rate)
			if rate < 900 || rate > 1100 {
				t.Errorf("%.0f frames/s passed %q, want 1,000 ± 10%%", rate, c.meter)
			}
			in, bands := meterStats(t, d, br)
			if len(bands) != 1 || bands[0] != in-total {
				t.Errorf("meter-stats: %d frames in, band counts %v; %d arrived, so the band dropped %d", in, bands, total, in-total)
			}
		})
	}
}

// A dscp_remark band marks what exceeds its rate, raising its drop
// precedence, and drops nothing.
func TestMeterRemarksTheExcess(t *testing.T) {
	testenv.RequireRoot(t)
	r := newRig(t, 2)
	d, br, p1, p2 := r.d, r.br, r.hosts[0], r.hosts[1]
	d.x(t, "add-meter", br, "meter=1 pktps bands=type=dscp_remark rate=1000 prec_level=1")
	d.x(t, "add-flow", br, fmt.Sprintf("priority=100,in_port=%s,udp,actions=meter:1,output:%s", p1.name, p2.name))
	const af11, af12 = 10 << 2, 12 << 2 // TOS of DSCP AF11, and of AF12, one drop precedence up
	arrived := tallyFrames(t, p2.ns, ethMAC(t, p1.ns), byTOS)
	sent := iperfUDP(t, p1, p2, 3, 100, "2400k", af11) // 3,000 frames/s
	settle()
	byTOS := arrived.done(t)
	in, bands := meterStats(t, d, br)
	t.Logf("frames by TOS %v in %v; meter-stats: %d in, bands %v", byTOS, sent, in, bands)
	// iperf3 sends its first datagram before it sets the TOS: DSCP 0,
	// whose drop precedence goes up to 1 (TOS 8) if it is marked.
	marked, total := byTOS[af12]+byTOS[8], 0
	for _, n := range byTOS {
		total += n
	}
	if total != in || byTOS[af11]+marked+byTOS[0] != total {
		t.Fatalf("frames arrived by TOS %v; want the %d the meter saw, AF11 (%#x) or AF12 (%#x)", byTOS, in, af11, af12)
	}
	if rate := float64(total-marked) / sent.Seconds(); rate < 900 || rate > 1100 {
		t.Errorf("%.0f frames/s left unmarked, want the meter's 1,000 ± 10%%", rate)
	}
	if len(bands) != 1 || bands[0] != marked {
		t.Errorf("the band counts %v, want the %d frames it marked", bands, marked)
	}
}
