package tap

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"

	"github.com/xswitch/xswitch/internal/testenv"
)

func TestTapValidate(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{}, "empty interface name"},
		{Config{Name: "0123456789abcdef"}, `interface name "0123456789abcdef" is 16 bytes long, longer than 15`},
		{Config{Name: "a/b"}, `invalid interface name "a/b"`},
		{Config{Name: "tap0", Owner: -1}, "owner -1 is not a user ID"},
		{Config{Name: "tap0", MTU: 67}, "MTU 67 is outside 68..65535"},
		{Config{Name: "tap0", MTU: 65536}, "MTU 65536 is outside"},
	} {
		err := tc.cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: got %v, want an error containing %q", tc.cfg, err, tc.want)
		}
	}
	if err := (Config{Name: "0123456789abcde", Owner: 1000}).Validate(); err != nil {
		t.Errorf("valid config: %v", err)
	}
}

// uniqueName is a name no other test (or run) uses.
func uniqueName(t *testing.T) string {
	name := fmt.Sprintf("xt%06xtap", rand.IntN(1<<24))
	t.Cleanup(func() {
		if l, err := netlink.LinkByName(name); err == nil {
			netlink.LinkDel(l)
		}
	})
	return name
}

func TestTapCreateDelete(t *testing.T) {
	testenv.RequireRoot(t)
	name := uniqueName(t)
	if Exists(name) {
		t.Fatalf("%s exists before Create", name)
	}
	if err := Create(Config{Name: name, Owner: 4242, MTU: 9000}); err != nil {
		t.Fatal(err)
	}
	if !Exists(name) {
		t.Fatalf("%s does not exist after Create", name)
	}
	out, err := exec.Command("ip", "-d", "link", "show", "dev", name).CombinedOutput()
	if err != nil {
		t.Fatalf("ip link show: %v\n%s", err, out)
	}
	for _, want := range []string{"UP", "mtu 9000", "tun type tap", "pi off", "vnet_hdr off", "persist on", "user 4242"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("ip -d link show %s lacks %q:\n%s", name, want, out)
		}
	}
	if v, err := os.ReadFile("/proc/sys/net/ipv6/conf/" + name + "/disable_ipv6"); err == nil && strings.TrimSpace(string(v)) != "1" {
		t.Errorf("IPv6 still enabled on %s", name)
	}
	if err := Create(Config{Name: name}); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("second Create: got %v, want \"already exists\"", err)
	}
	if err := Delete(name); err != nil {
		t.Fatal(err)
	}
	if Exists(name) {
		t.Errorf("%s exists after Delete", name)
	}
	if err := Delete(name); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Delete of a missing tap: got %v, want fs.ErrNotExist", err)
	}
}

func TestTapDeleteRefusesOtherKinds(t *testing.T) {
	testenv.RequireRoot(t)
	name := uniqueName(t)
	// A veth pair, left down: the machine may lack the dummy driver.
	pair := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: name}, PeerName: name[:len(name)-1] + "q"}
	if err := netlink.LinkAdd(pair); err != nil {
		t.Fatal(err)
	}
	if Exists(name) {
		t.Errorf("Exists(%s) is true for a veth", name)
	}
	if err := Delete(name); err == nil || !strings.Contains(err.Error(), "not a tap") {
		t.Errorf("Delete of a veth: got %v, want \"not a tap\"", err)
	}
	if _, err := netlink.LinkByName(name); err != nil {
		t.Errorf("the veth is gone: %v", err)
	}
}
