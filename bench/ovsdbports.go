package bench

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/xswitch/xswitch/internal/netns"
	"github.com/xswitch/xswitch/port/veth"
)

// The addport and ports workloads measure a switch as the daemon of an
// OVSDB server: how soon what ovs-vsctl asks for is done. Each
// measurement starts a private ovsdb-server (Open vSwitch's, the same for
// every case), then the case's switch daemon on it (Case.Switchd) in a
// namespace of its own where the ports' interfaces are, and adds a bridge
// of datapath_type netdev, as the ovs cases do.
//
// addport adds, addPortTrials times, a veth whose peer is in the
// generator's namespace with plain `ovs-vsctl add-port BRIDGE PORT` (which
// returns once the switch has applied it: cur_cfg), to a bridge that has
// the receiver's veth already. From before ovs-vsctl starts, the
// generator sends a UDP datagram to the receiver every addPortInterval, to
// its MAC address from the first (a permanent neighbour entry: ARP, which
// tries again only after a second, is not in the way): the time to the
// first that arrives is the port's time to forwarding.
//
// portsN adds N internal ports in one ovs-vsctl transaction: the time
// until ovs-vsctl returns, and until every port has its OpenFlow port
// number in Interface:ofport. Internal ports are what both ovs-vswitchd
// and xswitch make by themselves, without a device made beforehand.

// OVSDBServer is the private ovsdb-server of an addport or ports
// measurement, which a case's Switchd starts its daemon on.
type OVSDBServer struct {
	// Netns is where the daemon runs and the ports' interfaces are.
	Netns string
	// Socket is the server's address, as ovs-vswitchd and xswitch daemon
	// --ovsdb take it: unix:PATH.
	Socket string
	ovs    *ovsInstance
}

// OVSSwitchd is a Case.Switchd: ovs-vswitchd, all of it on SwitchCPU, as
// the ovs cases run it. The measurement stops it with its ovsdb-server.
func OVSSwitchd(ctx context.Context, db OVSDBServer, _ io.Writer) (stop func(), err error) {
	return func() {}, db.ovs.startVswitchd(ctx)
}

const (
	// addPortTrials is how many ports an addport measurement adds, one
	// after the other.
	addPortTrials = 5
	// addPortInterval is how often the generator sends while a port is
	// added: the resolution of the figure.
	addPortInterval = time.Millisecond
	// addPortUDPPort is where the datagrams go (discard).
	addPortUDPPort = 9
	// ovsdbPortsTimeout bounds how long a ports measurement waits for
	// the switch to add all its ports, and to remove them.
	ovsdbPortsTimeout = 10 * time.Minute
	// ovsdbPoll is how often the ports' numbers are looked at.
	ovsdbPoll = 50 * time.Millisecond
)

// addPortTrial is what adding one port took: until ovs-vsctl returned,
// and until the first datagram crossed it.
type addPortTrial struct {
	vsctl, forwarding time.Duration
}

// portsRound is what adding a ports workload's ports took: until
// ovs-vsctl returned, and until all had their OpenFlow port numbers.
type portsRound struct {
	vsctl, ofport time.Duration
}

// measureOVSDB runs a round of the addport or ports workload w on case
// c's switch daemon, in namespaces and a database of its own, and removes
// them all again.
func measureOVSDB(ctx context.Context, c Case, w Workload, opts Options) (s samples, err error) {
	tag := opts.Tag()
	o := &ovsInstance{netns: "xsbench-" + tag + "-sw"}
	gen, rcv, prefix := "xsbench-"+tag+"-gen", "xsbench-"+tag+"-rcv", "xsb"+tag
	var undo []func() error
	defer func() {
		for i := len(undo) - 1; i >= 0; i-- {
			err = errors.Join(err, undo[i]())
		}
	}()
	namespaces := []string{o.netns}
	if w.Kind == KindAddPort {
		namespaces = append(namespaces, gen, rcv)
	}
	for _, ns := range namespaces {
		if err := netns.Create(ns); err != nil {
			return samples{}, err
		}
		undo = append(undo, func() error { return netns.Delete(ns) })
	}
	undo = append(undo, o.stop)
	if err := o.startDatabase(ctx); err != nil {
		return samples{}, err
	}
	stop, err := c.Switchd(ctx, OVSDBServer{Netns: o.netns, Socket: "unix:" + o.path("db.sock"), ovs: o}, opts.Progress)
	if err != nil {
		return samples{}, err
	}
	undo = append(undo, func() error { stop(); return nil })
	bridge := prefix + "o"
	if err := o.addBridge(ctx, bridge); err != nil {
		return samples{}, err
	}
	// The bridge and its ports go before the switch stops, which is
	// then quick, and so that OVS takes down what it made.
	undo = append(undo, func() error {
		_, err := o.vsctlWithin(context.Background(), ovsdbPortsTimeout, "--if-exists", "del-br", bridge)
		return err
	})
	if w.Kind == KindAddPort {
		return measureAddPort(ctx, o, bridge, prefix, gen, rcv)
	}
	return measurePorts(ctx, o, bridge, prefix+"p", w.Ports)
}

// measureAddPort adds the receiver's veth to bridge, then addPortTrials
// veths from the generator's namespace one after the other, each removed
// again after it forwarded.
func measureAddPort(ctx context.Context, o *ovsInstance, bridge, prefix, gen, rcv string) (samples, error) {
	rcvPort := prefix + "r"
	err := netns.Do(o.netns, func() error {
		return veth.Create(veth.Config{Name: rcvPort, Namespace: rcv, Address: hostAddress(rcvIP)})
	})
	if err != nil {
		return samples{}, err
	}
	if _, err := o.vsctl(ctx, "add-port", bridge, rcvPort); err != nil {
		return samples{}, err
	}
	if err := o.waitPort(ctx, rcvPort); err != nil {
		return samples{}, err
	}
	rcvMAC, err := peerMAC(rcv)
	if err != nil {
		return samples{}, err
	}
	var l *net.UDPConn
	err = netns.Do(rcv, func() (err error) {
		l, err = net.ListenUDP("udp4", &net.UDPAddr{IP: rcvIP, Port: addPortUDPPort})
		return err
	})
	if err != nil {
		return samples{}, fmt.Errorf("listen in namespace %s: %w", rcv, err)
	}
	defer l.Close()
	var s samples
	for i := range addPortTrials {
		t, err := addPortOnce(ctx, o, bridge, prefix+"g"+strconv.Itoa(i), gen, rcvMAC, l)
		if err != nil {
			return samples{}, err
		}
		s.addPorts = append(s.addPorts, t)
	}
	return s, nil
}

// addPortOnce makes a veth pair port with its peer in gen, adds port to
// bridge while the generator sends to the receiver, which l listens for,
// and times it; then it removes the port and the pair.
func addPortOnce(ctx context.Context, o *ovsInstance, bridge, port, gen string, rcvMAC net.HardwareAddr, l *net.UDPConn) (t addPortTrial, err error) {
	err = netns.Do(o.netns, func() error {
		return veth.Create(veth.Config{Name: port, Namespace: gen, Address: hostAddress(genIP)})
	})
	if err != nil {
		return t, err
	}
	defer func() {
		_, delErr := o.vsctl(context.Background(), "--if-exists", "del-port", bridge, port)
		err = errors.Join(err, delErr, netns.Do(o.netns, func() error { return veth.Delete(port) }))
	}()
	var send *net.UDPConn
	err = netns.Do(gen, func() error {
		link, err := netlink.LinkByName(PeerName)
		if err != nil {
			return err
		}
		if err := netlink.NeighSet(&netlink.Neigh{LinkIndex: link.Attrs().Index, Family: netlink.FAMILY_V4,
			State: netlink.NUD_PERMANENT, IP: rcvIP, HardwareAddr: rcvMAC}); err != nil {
			return fmt.Errorf("the receiver's neighbour entry: %w", err)
		}
		send, err = net.DialUDP("udp4", nil, &net.UDPAddr{IP: rcvIP, Port: addPortUDPPort})
		return err
	})
	if err != nil {
		return t, fmt.Errorf("namespace %s: %w", gen, err)
	}
	defer send.Close()
	// Each datagram names the port, so that the receiver tells this
	// port's from those of the port before still queued.
	sending := make(chan struct{})
	defer close(sending)
	go func() {
		tick := time.NewTicker(addPortInterval)
		defer tick.Stop()
		for {
			send.Write([]byte(port)) // refused or dropped until the port forwards
			select {
			case <-sending:
				return
			case <-tick.C:
			}
		}
	}()
	start := time.Now()
	added := make(chan error, 1)
	go func() {
		_, err := o.vsctl(ctx, "add-port", bridge, port)
		t.vsctl = time.Since(start)
		added <- err
	}()
	if err := l.SetReadDeadline(start.Add(ovsReadyTimeout)); err != nil {
		return t, err
	}
	buf := make([]byte, 64)
	for t.forwarding == 0 {
		n, err := l.Read(buf)
		if err != nil {
			return t, errors.Join(fmt.Errorf("no datagram crossed port %s in %v: %w", port, ovsReadyTimeout, err), <-added)
		}
		if string(buf[:n]) == port {
			t.forwarding = time.Since(start)
		}
	}
	return t, <-added
}

// measurePorts adds n internal ports named prefix0, prefix1, ... to
// bridge in one ovs-vsctl transaction and times it.
func measurePorts(ctx context.Context, o *ovsInstance, bridge, prefix string, n int) (samples, error) {
	var args []string
	for i := range n {
		name := prefix + strconv.Itoa(i)
		if i > 0 {
			args = append(args, "--")
		}
		args = append(args, "add-port", bridge, name, "--", "set", "Interface", name, "type=internal")
	}
	start := time.Now()
	if _, err := o.vsctlWithin(ctx, ovsdbPortsTimeout, args...); err != nil {
		return samples{}, fmt.Errorf("adding %d ports: %w", n, err)
	}
	r := portsRound{vsctl: time.Since(start)}
	for {
		out, err := o.vsctl(ctx, "--format=csv", "--no-headings", "--data=bare", "--columns=name,ofport,error", "list", "Interface")
		if err != nil {
			return samples{}, err
		}
		numbered, failed, err := numberedPorts(out, prefix)
		if err != nil {
			return samples{}, err
		}
		if failed != "" {
			return samples{}, fmt.Errorf("adding %d ports: %s", n, failed)
		}
		if numbered == n {
			r.ofport = time.Since(start)
			return samples{ports: []portsRound{r}}, nil
		}
		if time.Since(start) > ovsdbPortsTimeout {
			return samples{}, fmt.Errorf("%d of %d ports have an OpenFlow port number after %v", numbered, n, ovsdbPortsTimeout)
		}
		if err := sleep(ctx, ovsdbPoll); err != nil {
			return samples{}, err
		}
	}
}

// numberedPorts reads ovs-vsctl's CSV of the Interface table's name,
// ofport and error columns: how many of the interfaces whose names begin
// with prefix have an OpenFlow port number, and the first error of one,
// with its name.
func numberedPorts(table, prefix string) (numbered int, failed string, err error) {
	rows, err := csv.NewReader(strings.NewReader(table)).ReadAll()
	if err != nil {
		return 0, "", fmt.Errorf("ovs-vsctl list Interface: %w", err)
	}
	for _, row := range rows {
		if len(row) != 3 {
			return 0, "", fmt.Errorf("ovs-vsctl list Interface printed %q, not name,ofport,error", row)
		}
		name, ofport, why := row[0], row[1], row[2]
		if !strings.HasPrefix(name, prefix) {
			continue
		}
		if n, err := strconv.Atoi(ofport); err == nil && n > 0 {
			numbered++
		}
		if why != "" && failed == "" {
			failed = fmt.Sprintf("interface %s: %s", name, why)
		}
	}
	return numbered, failed, nil
}

// hostAddress is ip with the bench's prefix length, as veth.Config's
// Address takes it.
func hostAddress(ip net.IP) string {
	return (&net.IPNet{IP: ip, Mask: net.CIDRMask(hostPrefixLen, 32)}).String()
}
