package bench

import (
	"context"
	"fmt"
	"os/exec"
	"strings"

	"github.com/vishvananda/netlink"

	"github.com/xswitch/xswitch/internal/netns"
)

// BridgeNFT is the kernel's bridge between the two veths with a stateful
// firewall in nftables, the kernel's counterpart of StatefulFirewallRules
// (nftRuleset). This kernel's bridge family has no connection tracking
// (CONFIG_NF_CONNTRACK_BRIDGE is off: "ct state" in a bridge table is
// refused), so bridged IPv4 goes through the inet family's hooks by
// br_netfilter (bridge-nf-call-iptables), whose conntrack tracks it. The
// bridge, its veth ends and the ruleset live in a namespace of their own,
// so that the host's netfilter is left alone.
func BridgeNFT() Case {
	c := Case{Name: "bridge-nft", Setup: setupBridgeNFT}
	if _, err := exec.LookPath("nft"); err != nil {
		c.Skip = "nftables is not installed (no nft): skipped"
	}
	return c
}

// nftRuleset is the firewall of BridgeNFT: what is part of a connection
// the tracker knows goes either way, new connections go only from the
// generator's side, everything else is dropped. br_netfilter shows the
// forward hook the bridge as both devices, never its ports, so the
// generator's side is its address. ARP passes no inet hook.
var nftRuleset = fmt.Sprintf(`table inet xsbench {
	chain forward {
		type filter hook forward priority filter; policy drop;
		ct state established,related accept
		ip saddr %s ct state new accept
	}
}
`, genIP)

func setupBridgeNFT(ctx context.Context, hosts Hosts) (_ func(), err error) {
	ns := hosts.GenPort + "-nft"
	if err := netns.Create(ns); err != nil {
		return nil, err
	}
	// The veths, the bridge and the ruleset go with their namespace.
	cleanup := func() { netns.Delete(ns) }
	defer func() {
		if err != nil {
			cleanup()
		}
	}()
	br := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: hosts.GenPort + "b"}}
	if err := netns.Do(ns, func() error {
		if _, err := CreateVeths(hosts); err != nil {
			return err
		}
		return setupBridge(ctx, br, hosts)
	}); err != nil {
		return nil, err
	}
	for _, step := range []struct {
		args  []string
		stdin string
	}{
		{[]string{"sysctl", "-q", "-w", "net.bridge.bridge-nf-call-iptables=1"}, ""},
		{[]string{"nft", "-f", "-"}, nftRuleset},
	} {
		cmd := exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", ns}, step.args...)...)
		cmd.Stdin = strings.NewReader(step.stdin)
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("%s in namespace %s: %w: %s", strings.Join(step.args, " "), ns, err, out)
		}
	}
	fmt.Fprintf(hosts.Log, "bridge %s in namespace %s with an nftables stateful firewall (inet family through br_netfilter)\n", br.Name, ns)
	return cleanup, nil
}
