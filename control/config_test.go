package control

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLoadRefusesWhatNoVerbWouldAccept keeps a fix: a configuration with
// two bridges of one name, or an invalid name, loaded (and the metrics
// endpoint then dropped every series for the duplicate labels).
func TestLoadRefusesWhatNoVerbWouldAccept(t *testing.T) {
	port := func(name string, ofport int) string {
		return fmt.Sprintf(`{"name":%q,"ofport":%d}`, name, ofport)
	}
	bridge := func(name string, ports ...string) string {
		return fmt.Sprintf(`{"name":%q,"ports":[%s],"flows":[]}`, name, strings.Join(ports, ","))
	}
	for _, c := range []struct{ name, config, want string }{
		{"two bridges of one name", bridge("br0") + "," + bridge("br0"), `bridge "br0" appears twice`},
		{"invalid bridge name", bridge("br 0"), `invalid bridge name "br 0"`},
		{"bridge name too long", bridge("abcdefghijklmnop"), "longer than 15"},
		{"invalid port name", bridge("br0", port("p%d", 1)), "name template"},
		{"one port on two bridges", bridge("br0", port("p1", 1)) + "," + bridge("br1", port("p1", 1)), `interface "p1" belongs to two ports`},
		{"one port twice", bridge("br0", port("p1", 1), port("p1", 2)), `interface "p1" belongs to two ports`},
		{"two ports, one number", bridge("br0", port("p1", 3), port("p2", 3)), `ports "p1" and "p2" both have ofport 3`},
		{"no number", bridge("br0", port("p1", 0)), "ofport 0 out of range"},
		{"reserved number", bridge("br0", port("p1", 0xff01)), "ofport 65281 out of range"},
		{"bad mode", bridge("br0", `{"name":"p1","ofport":1,"mode":"fast"}`), `unknown AF_XDP mode "fast"`},
		{"bad VLANs", bridge("br0", `{"name":"p1","ofport":1,"tag":10,"trunks":[20]}`), "an access port carries only its tag"},
		{"bad type", bridge("br0", `{"name":"p1","ofport":1,"type":"bond"}`), `unknown port type "bond"`},
		{"MTU of an existing interface", bridge("br0", `{"name":"p1","ofport":1,"mtu":9000}`), `existing interface "p1"`},
		{"bad controller target", `{"name":"br0","ports":[],"flows":[],"controllers":["tcp:localhost"]}`, `bridge br0: controller target "tcp:localhost": bad IP address`},
		{"one controller twice", `{"name":"br0","ports":[],"flows":[],"controllers":["ptcp:6653","ptcp:6653:0.0.0.0"]}`, "given twice"},
		{"bad fail mode", `{"name":"br0","ports":[],"flows":[],"fail_mode":"open"}`, `fail mode "open"`},
		{"bad datapath id", `{"name":"br0","ports":[],"flows":[],"datapath_id":"aabbccddeeff"}`, "datapath_id: \"aabbccddeeff\" is not a datapath id"},
		{"zero datapath id", `{"name":"br0","ports":[],"flows":[],"datapath_id":"0000000000000000"}`, "not all zero"},
		{"bad other_config:datapath-id", `{"name":"br0","ports":[],"flows":[],"other_config":{"datapath-id":"x"}}`, "other_config:datapath-id"},
		{"install times that do not add up", `{"name":"br0","ports":[],"flows":["priority=0 actions=NORMAL"],"installed":[{"at":"2026-01-01T00:00:00Z","count":2}]}`, "install times for 2 rules, but 1 rules"},
	} {
		path := filepath.Join(t.TempDir(), "conf.json")
		data := `{"bridges":[` + c.config + `]}`
		os.WriteFile(path, []byte(data), 0o600)
		_, err := LoadConfig(path)
		if err == nil || !strings.Contains(err.Error(), "corrupt") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: LoadConfig = %v; want it refused, saying %q", c.name, err, c.want)
		}
	}
}
