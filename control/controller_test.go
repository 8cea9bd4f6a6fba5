package control

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/xswitch/xswitch/control/api"
	"github.com/xswitch/xswitch/control/store"
	"github.com/xswitch/xswitch/flow"
)

var goodTargets = []struct {
	in        string
	listen    bool
	address   string
	canonical string
}{
	{"tcp:127.0.0.1", false, "127.0.0.1:6653", "tcp:127.0.0.1:6653"},
	{"tcp:192.0.2.1:6633", false, "192.0.2.1:6633", "tcp:192.0.2.1:6633"},
	{"tcp:10.0.0.1:", false, "10.0.0.1:6653", "tcp:10.0.0.1:6653"},
	{"tcp:[::1]:6653", false, "[::1]:6653", "tcp:[::1]:6653"},
	{"tcp:[::1]", false, "[::1]:6653", "tcp:[::1]:6653"},
	{"tcp:[2001:DB8::1]:7000", false, "[2001:db8::1]:7000", "tcp:[2001:db8::1]:7000"},
	{"tcp:[fe80::1%eth0]:6653", false, "[fe80::1%eth0]:6653", "tcp:[fe80::1%eth0]:6653"},
	{"ptcp:", true, "0.0.0.0:6653", "ptcp:6653"},
	{"ptcp:6653", true, "0.0.0.0:6653", "ptcp:6653"},
	{"ptcp:6653:0.0.0.0", true, "0.0.0.0:6653", "ptcp:6653"},
	{"ptcp:6634:127.0.0.1", true, "127.0.0.1:6634", "ptcp:6634:127.0.0.1"},
	{"ptcp::127.0.0.1", true, "127.0.0.1:6653", "ptcp:6653:127.0.0.1"},
	{"ptcp:6653:[::1]", true, "[::1]:6653", "ptcp:6653:[::1]"},
	{"ptcp:6653:[::]", true, "[::]:6653", "ptcp:6653:[::]"},
}

var badTargets = []struct{ in, want string }{
	{"", "want tcp:IP[:PORT] or ptcp:[PORT][:IP]"},
	{"127.0.0.1", "want tcp:IP[:PORT] or ptcp:[PORT][:IP]"},
	{"127.0.0.1:6653", `unknown connection method "127.0.0.1"`},
	{"udp:1.2.3.4", `unknown connection method "udp"`},
	{"TCP:1.2.3.4", `unknown connection method "TCP"`},
	{"ssl:1.2.3.4", `connection method "ssl" is not supported`},
	{"punix:/run/x.sock", `connection method "punix" is not supported`},
	{"tcp:", "no IP address"},
	{"tcp::6653", "no IP address"},
	{"tcp:localhost", `bad IP address "localhost"`},
	{"tcp:10.0.0.256", `bad IP address "10.0.0.256"`},
	{"tcp:010.0.0.1", `bad IP address "010.0.0.1"`},
	{"tcp:1.2.3.4:0", `bad port "0"`},
	{"tcp:1.2.3.4:65536", `bad port "65536"`},
	{"tcp:1.2.3.4:http", `bad port "http"`},
	{"tcp:1.2.3.4:-1", `bad port "-1"`},
	{"tcp:::1", "an IPv6 address goes in brackets"},
	{"tcp:2001:db8::1:6653", "an IPv6 address goes in brackets"},
	{"tcp:[::1", "no closing bracket"},
	{"tcp:[::1]6653", "after the IPv6 address"},
	{"tcp:[1.2.3.4]:6653", "brackets are for an IPv6 address"},
	{"tcp:[::g]:6653", `bad IP address "::g"`},
	{"ptcp:x", `bad port "x"`},
	{"ptcp:70000", `bad port "70000"`},
	{"ptcp:6653:::1", "an IPv6 address goes in brackets: [::1]"},
	{"ptcp:6653:[::1", "no closing bracket"},
	{"ptcp:6653:host", `bad IP address "host"`},
	{"ptcp:1:[fe80::1%]]", "bad IP address"},
}

func TestParseControllerTarget(t *testing.T) {
	for _, c := range goodTargets {
		got, err := ParseControllerTarget(c.in)
		want := ControllerTarget{Listen: c.listen, Address: c.address}
		if err != nil || got != want || got.String() != c.canonical {
			t.Errorf("ParseControllerTarget(%q) = %+v (%q), %v; want %+v (%q)", c.in, got, got.String(), err, want, c.canonical)
		}
	}
	for _, c := range badTargets {
		got, err := ParseControllerTarget(c.in)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), `controller target "`+c.in+`": `) {
			t.Errorf("ParseControllerTarget(%q) = %+v, %v; want an error naming the target and saying %q", c.in, got, err, c.want)
		}
	}
}

func TestDuplicateTargetsAreRefused(t *testing.T) {
	for _, targets := range [][]string{
		{"tcp:127.0.0.1", "tcp:127.0.0.1:6653"},
		{"ptcp:6653", "tcp:127.0.0.1", "ptcp:6653:0.0.0.0"},
	} {
		if _, err := parseControllerTargets(targets); err == nil || !strings.Contains(err.Error(), "given twice") {
			t.Errorf("parseControllerTargets(%q) = %v, want the duplicate refused", targets, err)
		}
	}
	if got, err := parseControllerTargets([]string{"tcp:127.0.0.1", "ptcp:6653:127.0.0.1"}); err != nil || len(got) != 2 {
		t.Errorf("a controller and a listener on one address: %v, %v; want both", got, err)
	}
}

// FuzzParseControllerTarget checks that parsing never panics, and that a
// target it accepts is written in a form that parses back to it, an
// address net.Dial and net.Listen take.
func FuzzParseControllerTarget(f *testing.F) {
	for _, c := range goodTargets {
		f.Add(c.in)
	}
	for _, c := range badTargets {
		f.Add(c.in)
	}
	f.Fuzz(func(t *testing.T, s string) {
		target, err := ParseControllerTarget(s)
		if err != nil {
			return
		}
		again, err := ParseControllerTarget(target.String())
		if err != nil || again != target {
			t.Fatalf("%q parsed as %+v, written %q, which parses as %+v, %v", s, target, target.String(), again, err)
		}
		if _, _, err := net.SplitHostPort(target.Address); err != nil {
			t.Fatalf("%q: address %q: %v", s, target.Address, err)
		}
	})
}

func TestParseFailMode(t *testing.T) {
	for s, want := range map[string]FailMode{"standalone": FailStandalone, "secure": FailSecure} {
		if got, err := ParseFailMode(s); err != nil || got != want || got.String() != s {
			t.Errorf("ParseFailMode(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	for _, s := range []string{"", "Secure", "open"} {
		if _, err := ParseFailMode(s); err == nil || !strings.Contains(err.Error(), "want standalone or secure") {
			t.Errorf("ParseFailMode(%q): %v, want an error", s, err)
		}
	}
	if (ControllerSettings{}).FailMode != FailStandalone {
		t.Error("zero settings are not standalone")
	}
}

// handle runs a request that must succeed.
func handle(t *testing.T, d *Daemon, req api.Request) api.Response {
	t.Helper()
	resp := d.Handle(req)
	if resp.Error != "" {
		t.Fatalf("%+v: %s", req, resp.Error)
	}
	return resp
}

// shown is one bridge as show answers.
func shown(t *testing.T, d *Daemon, bridge string) api.BridgeStatus {
	t.Helper()
	return handle(t, d, api.Request{Verb: api.VerbShow, Bridge: bridge}).Bridges[0]
}

// controllerColumns are what show says of a bridge's controller
// settings.
func controllerColumns(b api.BridgeStatus) api.BridgeStatus {
	return api.BridgeStatus{Name: b.Name, DatapathID: b.DatapathID, Controllers: b.Controllers, FailMode: b.FailMode}
}

// TestControllersSurviveRestarts: targets, fail mode and datapath id are
// saved in the journal, survive a crash and a clean stop's compaction,
// and so does their removal.
func TestControllersSurviveRestarts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "conf.json")
	d := quietDaemon(t, path)
	defer func() { d.Close() }()
	handle(t, d, api.Request{Verb: api.VerbAddBridge, Bridge: "br0"})
	handle(t, d, api.Request{Verb: api.VerbAddBridge, Bridge: "br1"})
	handle(t, d, api.Request{Verb: api.VerbSetController, Bridge: "br0", Targets: []string{"tcp:127.0.0.1", "ptcp:6653:[::1]"}})
	handle(t, d, api.Request{Verb: api.VerbSetFailMode, Bridge: "br0", FailMode: "secure"})
	handle(t, d, api.Request{Verb: api.VerbSetFailMode, Bridge: "br1", FailMode: "standalone"})
	want := controllerColumns(shown(t, d, "br0"))
	if want.FailMode != "secure" || !reflect.DeepEqual(want.Controllers, []api.ControllerStatus{{Target: "tcp:127.0.0.1:6653"}, {Target: "ptcp:6653:[::1]"}}) {
		t.Fatalf("after set-controller and set-fail-mode show says %+v", want)
	}
	if len(want.DatapathID) != 16 {
		t.Fatalf("datapath id %q, want 16 hex digits", want.DatapathID)
	}
	for _, stop := range []func(*Daemon) error{func(d *Daemon) error { crash(d); return nil }, (*Daemon).Close} {
		stop(d)
		d = quietDaemon(t, path)
		if got := controllerColumns(shown(t, d, "br0")); !reflect.DeepEqual(got, want) {
			t.Fatalf("restarted with %+v, want %+v", got, want)
		}
		if got := shown(t, d, "br1").FailMode; got != "standalone" {
			t.Fatalf("br1 restarted with fail mode %q, want standalone (set, as ovs-vsctl keeps it)", got)
		}
	}
	handle(t, d, api.Request{Verb: api.VerbDelController, Bridge: "br0"})
	handle(t, d, api.Request{Verb: api.VerbDelFailMode, Bridge: "br0"})
	crash(d)
	d = quietDaemon(t, path)
	if got := controllerColumns(shown(t, d, "br0")); len(got.Controllers) != 0 || got.FailMode != "" || got.DatapathID != want.DatapathID {
		t.Fatalf("after del-controller, del-fail-mode and a restart: %+v, want none, unset, datapath id %s", got, want.DatapathID)
	}
}

func TestControllerVerbsRefuseBadInput(t *testing.T) {
	d := quietDaemon(t, filepath.Join(t.TempDir(), "conf.json"))
	defer d.Close()
	handle(t, d, api.Request{Verb: api.VerbAddBridge, Bridge: "br0"})
	handle(t, d, api.Request{Verb: api.VerbSetController, Bridge: "br0", Targets: []string{"tcp:127.0.0.1"}})
	for _, c := range []struct {
		req  api.Request
		want string
	}{
		{api.Request{Verb: api.VerbSetController, Bridge: "br9", Targets: []string{"tcp:127.0.0.1"}}, `no bridge "br9"`},
		{api.Request{Verb: api.VerbSetController, Bridge: "br0"}, "at least one target"},
		{api.Request{Verb: api.VerbSetController, Bridge: "br0", Targets: []string{"ptcp:6653", "tcp:1.2.3.4:99999"}}, `controller target "tcp:1.2.3.4:99999": bad port`},
		{api.Request{Verb: api.VerbSetController, Bridge: "br0", Targets: []string{"tcp:[::1]", "tcp:[::1]:6653"}}, "given twice"},
		{api.Request{Verb: api.VerbSetFailMode, Bridge: "br0", FailMode: "open"}, `fail mode "open"`},
		{api.Request{Verb: api.VerbSetFailMode, Bridge: "br0"}, "needs a fail mode"},
		{api.Request{Verb: api.VerbDelFailMode, Bridge: "br9"}, `no bridge "br9"`},
		{api.Request{Verb: api.VerbSet, Table: api.TableBridge, Record: "br0", Columns: []string{"other_config:datapath-id=0"}}, "not a datapath id"},
		{api.Request{Verb: api.VerbSet, Table: api.TableBridge, Record: "br0", Columns: []string{"other_config:datapath-id=0000000000000000"}}, "not all zero"},
		{api.Request{Verb: api.VerbSet, Table: api.TableBridge, Record: "br0", Columns: []string{"other_config:datapath-id=000000000000000g"}}, "not a datapath id"},
	} {
		if resp := d.Handle(c.req); !strings.Contains(resp.Error, c.want) {
			t.Errorf("%+v: error %q, want one saying %q", c.req, resp.Error, c.want)
		}
	}
	if got := shown(t, d, "br0"); len(got.Controllers) != 1 || got.Controllers[0].Target != "tcp:127.0.0.1:6653" || got.FailMode != "" {
		t.Errorf("refused verbs changed the bridge: %+v", controllerColumns(got))
	}
}

// TestDatapathIDIsChosenOnceAndKept: a bridge saved without a datapath id
// gets one at start-up, which the next start finds saved even after a
// crash; other_config:datapath-id overrides it until removed.
func TestDatapathIDIsChosenOnceAndKept(t *testing.T) {
	path := filepath.Join(t.TempDir(), "conf.json")
	if err := store.Save(path, &store.Config{Bridges: []store.BridgeConfig{{Name: "br0", Ports: []api.PortConfig{}, Flows: []string{}}}}); err != nil {
		t.Fatal(err)
	}
	d := quietDaemon(t, path)
	defer func() { d.Close() }()
	chosen := shown(t, d, "br0").DatapathID
	id, err := parseDatapathID(chosen)
	if err != nil {
		t.Fatal(err)
	}
	if id>>48 != 0 || id&(1<<41) == 0 || id&(1<<40) != 0 {
		t.Errorf("datapath id %s: want 48 bits, a locally administered unicast address", chosen)
	}
	crash(d)
	d = quietDaemon(t, path)
	if again := shown(t, d, "br0").DatapathID; again != chosen {
		t.Fatalf("after a restart the datapath id is %s, was %s", again, chosen)
	}

	handle(t, d, api.Request{Verb: api.VerbSet, Table: api.TableBridge, Record: "br0", Columns: []string{"other_config:datapath-id=00000000000000AB"}})
	if got := shown(t, d, "br0").DatapathID; got != "00000000000000ab" {
		t.Errorf("with other_config:datapath-id=00000000000000AB the datapath id is %s", got)
	}
	handle(t, d, api.Request{Verb: api.VerbRemove, Table: api.TableBridge, Record: "br0", Columns: []string{"other_config", "datapath-id"}})
	if got := shown(t, d, "br0").DatapathID; got != chosen {
		t.Errorf("other_config:datapath-id removed, the datapath id is %s; want the one chosen, %s", got, chosen)
	}

	handle(t, d, api.Request{Verb: api.VerbAddBridge, Bridge: "br1"})
	if other := shown(t, d, "br1").DatapathID; other == chosen || len(other) != 16 {
		t.Errorf("a second bridge got datapath id %s (the first has %s)", other, chosen)
	}
}

// TestDatapathIDFromTheLocalPortsAddress: a bridge with a LOCAL port
// takes its datapath id from that interface's MAC address, as OVS does.
func TestDatapathIDFromTheLocalPortsAddress(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("creating a veth pair needs root")
	}
	name := "xsdp" + strings.ReplaceAll(time.Now().Format("150405.000"), ".", "")
	mac := net.HardwareAddr{0x02, 0xaa, 0xbb, 0xcc, 0xdd, 0xee}
	if err := netlink.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: name, HardwareAddr: mac}, PeerName: name + "p"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if link, err := netlink.LinkByName(name); err == nil {
			netlink.LinkDel(link)
		}
	})
	bc := &store.BridgeConfig{Name: name, Ports: []api.PortConfig{{Name: name, OFPort: flow.LocalPort}}}
	if got := newDatapathID(bc); got != 0x02aabbccddee {
		t.Errorf("datapath id of a bridge whose LOCAL port has MAC %s: %016x", mac, got)
	}
}

// TestOnControllers checks the hook's calls: every bridge at once, then
// each change in order, zero settings for a deleted bridge, nothing for a
// verb that changes no controller setting; and that the function may call
// the daemon back.
func TestOnControllers(t *testing.T) {
	d := quietDaemon(t, filepath.Join(t.TempDir(), "conf.json"))
	deadlocked := false
	defer func() {
		if !deadlocked { // else Close would wait for ever
			d.Close()
		}
	}()
	handle(t, d, api.Request{Verb: api.VerbAddBridge, Bridge: "br0"})
	handle(t, d, api.Request{Verb: api.VerbSetController, Bridge: "br0", Targets: []string{"tcp:127.0.0.1"}})
	id0, _ := parseDatapathID(shown(t, d, "br0").DatapathID)

	type call struct {
		bridge string
		s      ControllerSettings
	}
	calls := make(chan call, 100)
	registered := make(chan struct{})
	go func() {
		d.OnControllers(func(bridge string, s ControllerSettings) {
			// Back into the daemon, as the agent does: a verb, and the
			// status of a connection.
			if resp := d.Handle(api.Request{Verb: api.VerbShow}); resp.Error != "" {
				t.Errorf("show from the hook: %s", resp.Error)
			}
			d.SetControllerStatus(bridge, "tcp:127.0.0.1", ControllerConn{Connected: true, Role: "master"})
			calls <- call{bridge, s}
		})
		close(registered)
	}()
	select {
	case <-registered:
	case <-time.After(5 * time.Second):
		deadlocked = true
		t.Fatal("OnControllers has not returned after 5 s: its function calling the daemon deadlocked")
	}
	tcp := ControllerTarget{Address: "127.0.0.1:6653"}
	want := []call{{"br0", ControllerSettings{Targets: []ControllerTarget{tcp}, DatapathID: id0}}}
	if len(calls) != 1 {
		t.Fatalf("OnControllers returned after %d calls, want 1 (every bridge's settings)", len(calls))
	}

	handle(t, d, api.Request{Verb: api.VerbAddBridge, Bridge: "br1"})
	id1, _ := parseDatapathID(shown(t, d, "br1").DatapathID)
	want = append(want, call{"br1", ControllerSettings{DatapathID: id1}})
	handle(t, d, api.Request{Verb: api.VerbSetFailMode, Bridge: "br1", FailMode: "secure"})
	want = append(want, call{"br1", ControllerSettings{FailMode: FailSecure, DatapathID: id1}})
	handle(t, d, api.Request{Verb: api.VerbAddFlows, Bridge: "br0", Flows: []string{"priority=5,arp,actions=drop"}})
	handle(t, d, api.Request{Verb: api.VerbSet, Table: api.TableBridge, Record: "br0", Columns: []string{"other_config:forward-bpdu=true"}})
	handle(t, d, api.Request{Verb: api.VerbSetController, Bridge: "br0", Targets: []string{"tcp:127.0.0.1:6653"}}) // the same
	handle(t, d, api.Request{Verb: api.VerbSetController, Bridge: "br0", Targets: []string{"ptcp:6653", "tcp:127.0.0.1"}})
	want = append(want, call{"br0", ControllerSettings{Targets: []ControllerTarget{{Listen: true, Address: "0.0.0.0:6653"}, tcp}, DatapathID: id0}})
	handle(t, d, api.Request{Verb: api.VerbSet, Table: api.TableBridge, Record: "br0", Columns: []string{"other_config:datapath-id=0000000000000abc"}})
	want = append(want, call{"br0", ControllerSettings{Targets: []ControllerTarget{{Listen: true, Address: "0.0.0.0:6653"}, tcp}, DatapathID: 0xabc}})
	handle(t, d, api.Request{Verb: api.VerbDelBridge, Bridge: "br1"})
	want = append(want, call{"br1", ControllerSettings{}})
	handle(t, d, api.Request{Verb: api.VerbDelController, Bridge: "br0"})
	want = append(want, call{"br0", ControllerSettings{DatapathID: 0xabc}})

	for i, w := range want {
		select {
		case got := <-calls:
			if !reflect.DeepEqual(got, w) {
				t.Errorf("call %d: %s %+v, want %s %+v", i, got.bridge, got.s, w.bridge, w.s)
			}
		case <-time.After(5 * time.Second):
			deadlocked = true
			t.Fatalf("call %d (%s %+v) has not come after 5 s", i, w.bridge, w.s)
		}
	}
	select {
	case got := <-calls:
		t.Errorf("an extra call: %s %+v", got.bridge, got.s)
	case <-time.After(100 * time.Millisecond):
	}
}

// TestControllerStatus: show reports what the agent said of a target
// until the target is removed; set again, it starts unknown.
func TestControllerStatus(t *testing.T) {
	d := quietDaemon(t, filepath.Join(t.TempDir(), "conf.json"))
	defer d.Close()
	handle(t, d, api.Request{Verb: api.VerbAddBridge, Bridge: "br0"})
	handle(t, d, api.Request{Verb: api.VerbSetController, Bridge: "br0", Targets: []string{"tcp:127.0.0.1", "ptcp:6653"}})
	d.SetControllerStatus("br0", "tcp:127.0.0.1", ControllerConn{Connected: true, Role: "master"}) // as typed, not as saved
	d.SetControllerStatus("br0", "tcp:10.9.9.9:6653", ControllerConn{Connected: true})             // not configured
	d.SetControllerStatus("br9", "tcp:127.0.0.1:6653", ControllerConn{Connected: true})            // no such bridge
	want := []api.ControllerStatus{{Target: "tcp:127.0.0.1:6653", Connected: true, Role: "master"}, {Target: "ptcp:6653"}}
	if got := shown(t, d, "br0").Controllers; !reflect.DeepEqual(got, want) {
		t.Fatalf("show says %+v, want %+v", got, want)
	}
	handle(t, d, api.Request{Verb: api.VerbSetController, Bridge: "br0", Targets: []string{"ptcp:6653", "tcp:127.0.0.1"}})
	if got := shown(t, d, "br0").Controllers; !reflect.DeepEqual(got, []api.ControllerStatus{want[1], want[0]}) {
		t.Fatalf("targets reordered: show says %+v, want the status kept", got)
	}
	handle(t, d, api.Request{Verb: api.VerbSetController, Bridge: "br0", Targets: []string{"ptcp:6653"}})
	d.SetControllerStatus("br0", "tcp:127.0.0.1:6653", ControllerConn{Connected: true, Role: "master"}) // too late: removed
	handle(t, d, api.Request{Verb: api.VerbSetController, Bridge: "br0", Targets: []string{"tcp:127.0.0.1"}})
	if got := shown(t, d, "br0").Controllers; !reflect.DeepEqual(got, []api.ControllerStatus{{Target: "tcp:127.0.0.1:6653"}}) {
		t.Fatalf("a target removed and set again: show says %+v, want it not known to be connected", got)
	}
}

// TestOnControllersFollowsConcurrentVerbs: verbs from many clients at
// once reach the hook in the order they took effect, the order of the
// journal.
func TestOnControllersFollowsConcurrentVerbs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "conf.json")
	d := quietDaemon(t, path)
	defer d.Close()
	handle(t, d, api.Request{Verb: api.VerbAddBridge, Bridge: "br0"})
	var mu sync.Mutex
	var told []string
	d.OnControllers(func(bridge string, s ControllerSettings) {
		// An agent takes its time: calls made in the verbs' stead would
		// overtake each other.
		time.Sleep(time.Duration(rand.IntN(1000)) * time.Microsecond)
		mu.Lock()
		defer mu.Unlock()
		if len(s.Targets) > 0 {
			told = append(told, s.Targets[0].String())
		}
	})
	const clients, verbs = 4, 40
	var wg sync.WaitGroup
	for g := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range verbs {
				target := fmt.Sprintf("ptcp:%d", 10000+100*g+i)
				if resp := d.Handle(api.Request{Verb: api.VerbSetController, Bridge: "br0", Targets: []string{target}}); resp.Error != "" {
					t.Error(resp.Error)
				}
			}
		}()
	}
	wg.Wait()

	var committed []string
	journal, err := os.ReadFile(store.JournalPath(path))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range bytes.Split(bytes.TrimSpace(journal), []byte("\n"))[1:] {
		_, data, _ := bytes.Cut(line, []byte(" ")) // after the line's checksum
		var rec store.Record
		if err := json.Unmarshal(data, &rec); err != nil {
			t.Fatal(err)
		}
		if bc := rec.Config.Bridge("br0"); bc != nil && len(bc.Controllers) > 0 {
			committed = append(committed, bc.Controllers[0])
		}
	}
	if len(committed) != clients*verbs {
		t.Fatalf("the journal holds %d set-controllers, want %d", len(committed), clients*verbs)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		got := slices.Clone(told)
		mu.Unlock()
		if len(got) >= len(committed) || time.Now().After(deadline) {
			if !slices.Equal(got, committed) {
				t.Fatalf("the hook was told\n%v\nthe journal says\n%v", got, committed)
			}
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}
