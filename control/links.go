package control

import (
	"errors"
	"net"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/xswitch/xswitch/control/api"
	vswitch "github.com/xswitch/xswitch/switch"
)

// errVanished is why a port whose interface was deleted is down.
var errVanished = errors.New("interface vanished")

// errAdminDown is why a port whose interface is administratively down
// carries nothing.
var errAdminDown = errors.New("interface is administratively down (ip link set IFACE up)")

// resubscribeRetry is how long the link watcher waits before it tries
// again to subscribe, when subscribing fails.
const resubscribeRetry = time.Second

// watchLinks follows the kernel's link events until stop is closed: a port
// whose interface is deleted is closed and shown as down; when an interface
// of that name appears again the port is reopened, once per event, so a
// port that cannot be opened never retries in a loop; a port whose
// interface goes administratively down is shown so.
//
// The kernel drops link events that come faster than they are read (a
// burst of thousands of changes overflows the socket with ENOBUFS), and
// netlink then ends the subscription. The watcher subscribes again and
// resyncs by listing every link, so that no deletion or return goes
// unnoticed.
func (d *Daemon) watchLinks(stop <-chan struct{}) error {
	sub, err := d.subscribeLinks(stop)
	if err != nil {
		return err
	}
	go func() {
		defer close(d.linksDone)
		for {
			select {
			case <-stop:
				sub.end()
				return
			case u, ok := <-sub.updates:
				if ok {
					d.linkEvent(u)
					continue
				}
			}
			sub.end()
			d.log.Warn("link events were lost; subscribing again, and checking every port's interface")
			for {
				if sub, err = d.subscribeLinks(stop); err == nil {
					break
				}
				d.log.Error("subscribing to link events", "err", err, "retry_in", resubscribeRetry)
				select {
				case <-stop:
					return
				case <-time.After(resubscribeRetry):
				}
			}
			d.resyncLinks()
		}
	}()
	return nil
}

// linkSubscription is one netlink subscription to link events.
type linkSubscription struct {
	updates chan netlink.LinkUpdate
	done    chan struct{} // closed to end it
}

func (d *Daemon) subscribeLinks(stop <-chan struct{}) (*linkSubscription, error) {
	sub := &linkSubscription{updates: make(chan netlink.LinkUpdate, 64), done: make(chan struct{})}
	err := netlink.LinkSubscribeWithOptions(sub.updates, sub.done, netlink.LinkSubscribeOptions{
		ErrorCallback: func(err error) {
			select {
			case <-stop: // closing the subscription fails its receive: expected
			default:
				d.log.Error("watching link events", "err", err)
			}
		},
	})
	if err != nil {
		return nil, err
	}
	return sub, nil
}

// end closes the subscription and waits for netlink's reader to finish.
func (s *linkSubscription) end() {
	select {
	case <-s.done:
	default:
		close(s.done)
	}
	for range s.updates { // closed once netlink's reader has stopped
	}
}

func (d *Daemon) linkEvent(u netlink.LinkUpdate) {
	d.mu.Lock()
	defer d.mu.Unlock()
	attrs := u.Attrs()
	if u.Header.Type == unix.RTM_DELLINK {
		attrs = nil
	}
	d.followLink(u.Attrs().Name, attrs)
}

// resyncLinks brings every port in line with the interfaces the kernel
// has now.
func (d *Daemon) resyncLinks() {
	links, err := netlink.LinkList()
	if err != nil {
		d.log.Error("listing links to resync the ports", "err", err)
		return
	}
	byName := make(map[string]*netlink.LinkAttrs, len(links))
	for _, l := range links {
		byName[l.Attrs().Name] = l.Attrs()
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, bc := range d.cfg.Bridges {
		for _, pc := range bc.Ports {
			d.followLink(deviceOf(pc), byName[deviceOf(pc)])
		}
	}
	for _, dev := range d.underlays.Interfaces() {
		d.followLink(dev, byName[dev])
	}
	d.log.Info("ports resynced with the kernel's links", "links", len(links))
}

// followLink brings the port whose AF_XDP socket is on interface dev, if
// there is one, in line with that interface as the kernel has it now:
// gone (link nil), or link. It runs under the verb lock.
func (d *Daemon) followLink(dev string, link *netlink.LinkAttrs) {
	if u := d.underlays.On(dev); u != nil && (link == nil || link.Index != u.Info().Ifindex) {
		// Tunnels come back by refreshTunnels, once a route does.
		d.closeUnderlayTunnels(dev)
	}
	bridge, pc, ok := d.findPort(dev)
	// Only the interface the socket is on counts: an internal port's name
	// here may be an unrelated interface, its own being in another
	// namespace; and a tunnel has none.
	if !ok || deviceOf(pc) != dev || pc.IsTunnel() {
		return
	}
	b := d.bridges[bridge]
	name := pc.Name
	_, isDown := d.down[name]
	switch {
	case link == nil && isDown:
	case link == nil:
		d.closeVanished(b, pc)
	case !isDown && link.Index == d.opened[name].Index:
		d.opened[name] = openedPort{Index: link.Index, AdminDown: link.Flags&net.FlagUp == 0}
		d.followLinkState(b, name, link)
	default:
		// Back after it vanished, or replaced by another of the same name
		// while the events that said so were lost.
		if !isDown {
			d.closeVanished(b, pc)
		}
		if err := d.attach(b, pc); err != nil {
			d.down[name] = err
			d.log.Error("port stays down: its interface returned but cannot be opened", "bridge", bridge, "port", name, "err", err)
			return
		}
		delete(d.down, name)
		d.log.Info("port up: its interface returned", "bridge", bridge, "port", name)
	}
}

// followLinkState tells bridge b whether port name's link is up: the
// interface is up and has a carrier (a veth whose peer is down has none),
// which is what makes it live for the groups that watch it.
func (d *Daemon) followLinkState(b *vswitch.Bridge, name string, link *netlink.LinkAttrs) {
	up := link.Flags&net.FlagUp != 0 && link.RawFlags&unix.IFF_LOWER_UP != 0
	if err := b.SetPortLink(name, up); err != nil {
		d.log.Error("following a port's link state", "bridge", b.Name(), "port", name, "err", err)
	}
}

// closeVanished closes a port whose interface is gone.
func (d *Daemon) closeVanished(b *vswitch.Bridge, pc api.PortConfig) {
	if err := d.closeKeepingCounters(b, pc.Name); err != nil {
		d.log.Error("closing a vanished port", "bridge", b.Name(), "port", pc.Name, "err", err)
	}
	delete(d.opened, pc.Name)
	d.down[pc.Name] = errVanished
	d.log.Warn("port down: its interface vanished", "bridge", b.Name(), "port", pc.Name)
}

// closeKeepingCounters closes the port name of b, whose interface (or
// underlay) went away, and keeps what it counted: a port that is down
// shows its counters, and they go on from there when it comes back, as
// they do in Open vSwitch across a link that goes down.
func (d *Daemon) closeKeepingCounters(b *vswitch.Bridge, name string) error {
	b.SyncFastPath() // what the kernel carried for it counts too
	for _, ps := range b.Ports() {
		if ps.Name == name {
			d.carried[name] = d.carried[name].Plus(ps.Stats)
		}
	}
	return b.RemovePort(name)
}

// findPort returns the bridge and configuration of the port named name,
// or whose AF_XDP socket is on the interface name.
func (d *Daemon) findPort(name string) (string, api.PortConfig, bool) {
	for _, bc := range d.cfg.Bridges {
		for _, pc := range bc.Ports {
			if pc.Name == name || deviceOf(pc) == name {
				return bc.Name, pc, true
			}
		}
	}
	return "", api.PortConfig{}, false
}
