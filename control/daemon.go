// Package control is xswitch's daemon: it owns the bridges, opens their
// ports, tunnels and underlays, follows the kernel's links and routes,
// and applies the configuration the verbs change, each change saved
// before the verb returns. It implements the protocol of package api
// (Daemon.Handle) and gives typed calls to what runs beside it in the
// process: the OpenFlow agent (flow edits, ports and their counters,
// controller settings) and the metrics endpoint.
//
// It decides what a configuration may hold (the verbs' rules, which the
// store holds a loaded configuration to), but keeps it only through
// package store, never in files of its own; and it answers with data,
// leaving what people read to the clients.
package control

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"slices"
	"sync"
	"time"

	vswitch "github.com/xswitch/xswitch/switch"

	"github.com/vishvananda/netlink"

	"github.com/xswitch/xswitch/conntrack"
	"github.com/xswitch/xswitch/control/api"
	"github.com/xswitch/xswitch/control/store"
	"github.com/xswitch/xswitch/flow"
	"github.com/xswitch/xswitch/internal/ifname"
	"github.com/xswitch/xswitch/ovsdb"
	"github.com/xswitch/xswitch/port"
	"github.com/xswitch/xswitch/port/afxdp"
	"github.com/xswitch/xswitch/port/veth"
	"github.com/xswitch/xswitch/tunnel"
)

// DefaultDB is where the daemon keeps its configuration unless told
// otherwise.
const DefaultDB = "/var/lib/xswitch/conf.json"

// Options configure a daemon.
type Options struct {
	DBPath string          // where the configuration is kept
	Log    *slog.Logger    // nil: slog.Default()
	Bridge vswitch.Options // for every bridge
	// OVSDB, unless "", is the OVSDB server (unix:PATH or tcp:IP:PORT)
	// whose Open_vSwitch database says what the bridges and ports are
	// (ovsdb.go); Version is what the daemon tells it is its version.
	OVSDB, Version string
}

// Daemon owns the bridges and the persisted configuration. Its methods are
// the verbs of the protocol; each either applies completely and is saved
// before it returns, or changes nothing and returns an error.
type Daemon struct {
	dbPath     string
	log        *slog.Logger
	bridgeOpts vswitch.Options

	mu  sync.Mutex    // serializes verbs
	db  *store.Store  // the configuration on disk, locked for this daemon
	cfg *store.Config // bridges and ports as saved: the truth a restart restores
	// holdConfig holds back the journal writes that only replace the
	// configuration, and configHeld says one was (holdConfigWrites).
	holdConfig, configHeld bool
	bridges                map[string]*vswitch.Bridge
	down                   map[string]error      // ports in cfg that could not be opened, by name
	opened                 map[string]openedPort // the others, by name
	removed                removals              // rules removed, for OnFlowsRemoved
	// carried are what ports counted before their interface (or a
	// tunnel's underlay) went away, by name: a port's counters go on from
	// there, while it is down and once it is back (links.go).
	carried map[string]vswitch.PortStats
	// tunnels are the open tunnel ports, by name, and underlays the
	// underlays they hold, by interface (tunnel.go).
	tunnels   map[string]*tunnel.Port
	underlays tunnel.Underlays

	// controllers are the OpenFlow agent's hooks into the daemon
	// (controller.go).
	controllers controllerHub
	// conntrack is the connection tracker every bridge shares
	// (conntrack.go).
	conntrack *conntrack.Tracker

	// ovsdb is Options.OVSDB: with one, the verbs that change bridges and
	// ports refuse, and ovsdbDone is closed when its follower is done.
	ovsdb     string
	ovsdbDone chan struct{}

	stop        chan struct{} // closed by Close: ends the goroutines below
	expiryDone  chan struct{}
	linksDone   chan struct{}
	tunnelsDone chan struct{}
	sweepDone   chan struct{}
}

// NewDaemon locks and loads the configuration at opts.DBPath and brings up
// every bridge and port it lists. A port that cannot be opened stays
// configured and is shown as down with the reason; a configuration that
// cannot be read, or that another daemon holds, is an error.
func NewDaemon(opts Options) (*Daemon, error) {
	dbPath, log := opts.DBPath, opts.Log
	if log == nil {
		log = slog.Default()
	}
	if opts.Bridge.Logger == nil {
		opts.Bridge.Logger = log // what a forwarder says once goes to the daemon's log
	}
	if opts.OVSDB != "" {
		if err := ovsdb.CheckTarget(opts.OVSDB); err != nil {
			return nil, err
		}
	}
	db, loaded, err := store.Open(dbPath, time.Now(), configRules)
	if err != nil {
		return nil, err
	}
	if loaded.Torn {
		log.Warn("the configuration's last change was cut short by a crash before it was acknowledged; it is dropped", "path", store.JournalPath(dbPath))
	}
	d := &Daemon{
		dbPath:     dbPath,
		log:        log,
		bridgeOpts: opts.Bridge,
		db:         db,
		cfg:        loaded.Config,
		bridges:    map[string]*vswitch.Bridge{},
		down:       map[string]error{},
		opened:     map[string]openedPort{},
		carried:    map[string]vswitch.PortStats{},
		tunnels:    map[string]*tunnel.Port{},
		conntrack:  conntrack.New(conntrack.Config{}),
		ovsdb:      opts.OVSDB,
	}
	// Before the bridges, so that none forwards a moment without the
	// limits.
	d.applyConntrackConfig(d.cfg.Conntrack)
	d.bridgeOpts.Conntrack = d.conntrack
	d.underlays.Closed = func(iface string) { log.Info("tunnel underlay closed", "interface", iface) }
	for _, bc := range d.cfg.Bridges {
		b, err := vswitch.New(bc.Name, loaded.Tables[bc.Name], d.bridgeOpts)
		if err != nil {
			d.Close()
			return nil, fmt.Errorf("restoring bridge %s: %w", bc.Name, err)
		}
		d.bridges[bc.Name] = b
		// Before the ports, so that none forwards a moment unprotected.
		settings, _ := bridgeSettingsOf(&bc) // LoadConfig validated them
		if err := settings.apply(b); err != nil {
			d.Close()
			return nil, fmt.Errorf("restoring bridge %s: %w", bc.Name, err)
		}
		for _, pc := range bc.Ports {
			if err := d.restorePort(b, pc); err != nil {
				d.down[pc.Name] = err
				log.Error("port is down", "bridge", bc.Name, "port", pc.Name, "err", err)
				continue
			}
			log.Info("port restored", "bridge", bc.Name, "port", pc.Name)
		}
	}
	d.controllers.syncStatus(d.cfg)
	log.Info("configuration loaded", "path", dbPath, "bridges", len(d.cfg.Bridges), "changes_replayed", loaded.Records)
	d.stop, d.expiryDone, d.linksDone, d.tunnelsDone, d.sweepDone = make(chan struct{}), make(chan struct{}), make(chan struct{}), make(chan struct{}), make(chan struct{})
	// OpenFlow timeouts have a resolution of one second; connections
	// past their time are gone for packets at once, and the sweep frees
	// their room; tunnels that cannot reach their remote are looked at
	// again.
	d.every(time.Second, d.expiryDone, d.expireFlows)
	d.every(sweepInterval, d.sweepDone, func(time.Time) { d.conntrack.Sweep(conntrack.Now()) })
	d.every(tunnelRetry, d.tunnelsDone, func(time.Time) {
		if d.tunnelsWaiting() {
			d.refreshTunnels()
		}
	})
	if err := d.watchLinks(d.stop); err != nil {
		close(d.linksDone)
		d.Close()
		return nil, fmt.Errorf("watching link events: %w", err)
	}
	if err := d.watchTunnels(d.stop); err != nil {
		d.Close()
		return nil, fmt.Errorf("watching the routing and neighbour tables: %w", err)
	}
	if opts.OVSDB != "" {
		d.ovsdbDone = make(chan struct{})
		go d.followOVSDB(opts.OVSDB, opts.Version)
	}
	return d, nil
}

// restorePort re-attaches a configured port, recreating its veth pair or
// tap if xswitch made it and it is gone (after a reboot, say).
func (d *Daemon) restorePort(b *vswitch.Bridge, pc api.PortConfig) error {
	if missingOwnedDevice(pc) {
		if err := createOwnedDevice(pc); err != nil {
			return err
		}
	}
	return d.attach(b, pc)
}

// attach opens a configured port and adds it to b.
func (d *Daemon) attach(b *vswitch.Bridge, pc api.PortConfig) error {
	var p port.Port
	var err error
	if pc.IsTunnel() {
		p, err = d.openTunnel(b.Name(), pc)
	} else {
		p, err = d.openPort(pc)
	}
	if err != nil {
		return err
	}
	if _, err := addToBridge(b, p, pc); err != nil {
		p.Close()
		delete(d.tunnels, pc.Name)
		return err
	}
	op := openedPort{Index: p.Info().Ifindex}
	if link, err := netlink.LinkByIndex(op.Index); err == nil && !pc.IsTunnel() {
		op.AdminDown = link.Attrs().Flags&net.FlagUp == 0
		d.followLinkState(b, pc.Name, link.Attrs())
	}
	d.opened[pc.Name] = op
	return nil
}

// internalFrameCount is the UMEM frames of an internal port's socket, a
// quarter of a port's default: a thousand internal ports (what an OVSDB
// client may add in one transaction) would lock 16 GiB of UMEM at the
// default, and an internal port carries what the host's own stack sends,
// which a veth hands over in copy mode, a frame at a time, not a NIC's
// bursts.
const internalFrameCount = 1024

// openedPort is what the daemon knows of an open port's interface.
type openedPort struct {
	Index     int  // the interface the port opened, not another of its name
	AdminDown bool // it carries nothing until "ip link set IFACE up"
}

// openPort opens a configured port and logs where "auto" had to fall back:
// an operator who expected zero-copy on a NIC wants to know.
func (d *Daemon) openPort(pc api.PortConfig) (port.Port, error) {
	mode, err := afxdp.ParseMode(pc.Mode)
	if err != nil {
		return nil, err
	}
	cfg := afxdp.Config{Interface: deviceOf(pc), Queues: pc.Queues, Mode: mode}
	if pc.Type == api.PortTypeInternal {
		cfg.FrameCount = internalFrameCount
	}
	p, err := afxdp.Open(cfg)
	if err != nil {
		return nil, err
	}
	d.enablePeerGRO(p.Info().Ifindex, "port", pc.Name)
	if info := p.Info(); mode == afxdp.ModeAuto {
		if info.XDPMode != "native" {
			d.log.Warn("driver-mode XDP unavailable, fell back", "port", pc.Name, "xdp", info.XDPMode)
		}
		if info.BindMode != "zerocopy" {
			d.log.Info("zero-copy AF_XDP unavailable, fell back", "port", pc.Name, "bind", info.BindMode)
		}
		if warning := afxdp.MTUProblem(info); warning != "" {
			d.log.Warn("port cannot carry its interface's MTU", "port", pc.Name, "why", warning)
		}
	}
	if deviceOf(pc) != pc.Name {
		return renamedPort{Port: p, name: pc.Name}, nil
	}
	return p, nil
}

// enablePeerGRO turns GRO on at the peer of the veth with index ifindex,
// one that xswitch did not create (a container runtime's, say), so that
// the fast path can send to it (see veth.EnablePeerGRO), and logs it:
// that changes a device of another namespace. It is done when the port
// is attached, not after: an operator who turns GRO off again is obeyed,
// and show says why the fast path no longer sends to the port. With the
// fast path off, the peer is left alone. who names the port in the log.
func (d *Daemon) enablePeerGRO(ifindex int, who ...any) {
	if !d.bridgeOpts.FastPath {
		return
	}
	changed, peer, where, err := veth.EnablePeerGRO(ifindex)
	switch {
	case err != nil:
		d.log.Warn("GRO cannot be turned on at the veth peer: the fast path will not send to it", append(who, "err", err)...)
	case changed:
		d.log.Info("turned GRO on at the veth peer, so that the fast path can send to it", append(who, "peer", peer, "netns", cmp.Or(where, "the daemon's"))...)
	}
}

// Close stops every bridge and closes its ports, leaving the configuration
// (and the veth pairs it describes) for the next start, and releases the
// configuration's lock.
func (d *Daemon) Close() error {
	if d.stop != nil {
		close(d.stop)
		<-d.expiryDone
		<-d.linksDone
		<-d.tunnelsDone
		<-d.sweepDone
		if d.ovsdbDone != nil {
			<-d.ovsdbDone
		}
		d.controllers.running.Wait()
		d.stop = nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	// A clean stop leaves the snapshot alone as the configuration. A
	// daemon that failed to start has not every bridge's table to write.
	if d.db != nil && d.db.Changes() > 0 && len(d.bridges) == len(d.cfg.Bridges) {
		d.compact()
	}
	var errs []error
	for name, b := range d.bridges {
		if err := b.Close(); err != nil {
			errs = append(errs, fmt.Errorf("bridge %s: %w", name, err))
		}
		delete(d.bridges, name)
	}
	if d.db != nil {
		d.db.Close()
		d.db = nil
	}
	return errors.Join(errs...)
}

// Handle runs one request: the daemon is the api.Handler that api.Serve
// takes its clients' requests to.
func (d *Daemon) Handle(req api.Request) api.Response {
	var err error
	var resp api.Response
	switch req.Verb {
	case api.VerbDumpFlows:
		// A big table takes long to format: do it outside the verb lock,
		// from the immutable version current when the request came.
		resp.Flows, err = d.dumpFlows(req.Bridge, req.Match)
	case api.VerbDumpGroups, api.VerbDumpGroupStats:
		var id uint32
		if id, err = groupSelector(req.Match); err == nil {
			resp.Groups, err = d.Groups(req.Bridge, id)
		}
	case api.VerbDumpMeters, api.VerbMeterStats:
		var id uint32
		if id, err = flow.ParseMeterID(req.Match); err == nil {
			resp.Meters, err = d.Meters(req.Bridge, id)
		}
	case api.VerbDumpConntrack, api.VerbFlushConntrack, api.VerbCTStatsShow, api.VerbCTGetMaxConns, api.VerbCTGetNConns,
		api.VerbCTGetLimits, api.VerbCTGetTCPSeqChk, api.VerbListZoneTP:
		resp.Conntrack, err = d.conntrackRead(req)
	case api.VerbStatus:
		// A daemon serves only once restored: answering is the news, and
		// must not wait for other verbs.
		resp.Status = &api.DaemonStatus{PID: os.Getpid(), DB: d.dbPath}
	default:
		d.mu.Lock()
		resp, err = d.handleLocked(req)
		d.unlock()
	}
	if err != nil {
		return api.Response{Error: err.Error()}
	}
	return resp
}

// handleLocked runs a verb under the verb lock.
func (d *Daemon) handleLocked(req api.Request) (api.Response, error) {
	var err error
	var resp api.Response
	if d.ovsdb != "" && configVerbs[req.Verb] {
		return resp, fmt.Errorf("%s: this daemon follows the OVSDB server %s (--ovsdb), which holds its bridges, ports and zones' timeout policies: change them there, with ovs-vsctl --db=%s", req.Verb, d.ovsdb, d.ovsdb)
	}
	before := d.cfg
	switch req.Verb {
	case api.VerbAddBridge:
		err = d.addBridge(req.Bridge)
	case api.VerbDelBridge:
		err = d.delBridge(req.Bridge)
	case api.VerbAddPort:
		if req.AddPort == nil {
			err = errors.New("add-port without a port")
			break
		}
		err = d.addPort(req.Bridge, *req.AddPort)
	case api.VerbDelPort:
		err = d.delPort(req.Bridge, req.Port)
	case api.VerbShow:
		resp.Bridges, err = d.show(req.Bridge)
	case api.VerbFDB:
		resp.FDB, err = d.fdb(req.Bridge)
	case api.VerbDumpTables:
		resp.Tables, err = d.dumpTables(req.Bridge)
	case api.VerbDumpFast:
		resp.FastPath, err = d.dumpFastPath(req.Bridge)
	case api.VerbAddFlows:
		err = d.addFlows(req.Bridge, req.Flows, req.FlowLines)
	case api.VerbModFlows:
		resp.Changed, err = d.modFlows(req.Bridge, req.Flows, req.Strict)
	case api.VerbDelFlows:
		resp.Changed, err = d.delFlows(req.Bridge, req.Match, req.Strict)
	case api.VerbTrace:
		resp.Trace, err = d.trace(req.Bridge, req.Match, req.CTNext)
	case api.VerbAddGroups, api.VerbModGroup, api.VerbDelGroups, api.VerbInsertBuckets, api.VerbRemoveBuckets:
		err = d.groupVerb(req)
	case api.VerbAddMeter, api.VerbModMeter, api.VerbDelMeters:
		err = d.meterVerb(req)
	case api.VerbSet:
		err = d.setColumns(req.Table, req.Record, req.Columns)
	case api.VerbGet:
		resp.Values, err = d.getColumns(req.Table, req.Record, req.Columns)
	case api.VerbAdd:
		err = d.addValues(req.Table, req.Record, req.Columns)
	case api.VerbRemove:
		err = d.removeValues(req.Table, req.Record, req.Columns)
	case api.VerbClear:
		err = d.clearColumns(req.Table, req.Record, req.Columns)
	case api.VerbRSTPShow:
		resp.RSTP, err = d.rstpShow(req.Bridge)
	case api.VerbSetController:
		if len(req.Targets) == 0 {
			err = errors.New("set-controller needs at least one target (del-controller removes them)")
			break
		}
		err = d.setControllers(req.Bridge, req.Targets)
	case api.VerbDelController:
		err = d.setControllers(req.Bridge, nil)
	case api.VerbSetFailMode:
		if req.FailMode == "" {
			err = errors.New("set-fail-mode needs a fail mode (del-fail-mode removes it)")
			break
		}
		err = d.setFailMode(req.Bridge, req.FailMode)
	case api.VerbDelFailMode:
		err = d.setFailMode(req.Bridge, "")
	case api.VerbCTSetMaxConns, api.VerbCTSetLimits, api.VerbCTDelLimits, api.VerbCTEnableTCPSeqChk, api.VerbCTDisableTCPSeqChk,
		api.VerbAddZoneTP, api.VerbDelZoneTP:
		err = d.conntrackSetting(req)
	default:
		err = fmt.Errorf("unknown verb %q", req.Verb)
	}
	d.changed(before, err)
	return resp, err
}

// changed follows what was done under the verb lock to the configuration,
// which was before: a journal compacted when due (unless it failed), the
// OpenFlow agent told of changed controller settings.
func (d *Daemon) changed(before *store.Config, err error) {
	if err == nil {
		d.compactIfDue()
	}
	if d.cfg != before {
		d.controllers.changed(before, d.cfg)
	}
}

// save writes rec to the journal and adopts its configuration, if it has
// one. The caller installs the flow tables rec edits once it succeeds.
func (d *Daemon) save(rec store.Record) error {
	if d.holdConfig && rec.Config != nil && rec.Flows == nil {
		d.cfg, d.configHeld = rec.Config, true
		return nil
	}
	if err := d.db.Append(rec); err != nil {
		return fmt.Errorf("saving the configuration: %w", err)
	}
	if rec.Config != nil {
		d.cfg, d.configHeld = rec.Config, false
	}
	return nil
}

// holdConfigWrites runs apply with the journal writes that only replace
// the configuration held back, and then writes the configuration once.
// Each such record is the whole configuration: a database transaction
// that adds a thousand ports would otherwise write a thousand growing
// copies of it, each synced to disk. A crash before the one write loses
// only what the database still holds, and the next start applies again.
func (d *Daemon) holdConfigWrites(apply func()) error {
	d.holdConfig, d.configHeld = true, false
	apply()
	d.holdConfig = false
	if !d.configHeld {
		return nil
	}
	return d.commit(d.cfg)
}

// commit saves next as the configuration of bridges and ports, and adopts
// it.
func (d *Daemon) commit(next *store.Config) error {
	return d.save(store.Record{Time: time.Now(), Config: next})
}

// compactIfDue writes a new snapshot when the journal has outgrown the
// last one.
func (d *Daemon) compactIfDue() {
	if d.db.DueForCompaction() {
		d.compact()
	}
}

// compact writes the configuration in use as a new snapshot. A failure
// costs only disk space: the journal still holds every change.
func (d *Daemon) compact() {
	tables := make(map[string]*flow.Table, len(d.bridges))
	for name, b := range d.bridges {
		tables[name] = b.Flows()
	}
	if err := d.db.Compact(d.cfg, tables); err != nil {
		d.log.Error("compacting the configuration's journal", "path", d.dbPath, "err", err)
		return
	}
	d.log.Info("configuration compacted", "path", d.dbPath, "generation", d.db.Generation())
}

func (d *Daemon) bridge(name string) (*vswitch.Bridge, error) {
	if b, ok := d.bridges[name]; ok {
		return b, nil
	}
	return nil, fmt.Errorf("no bridge %q", name)
}

func (d *Daemon) addBridge(name string) error {
	if err := ifname.Validate("bridge", name); err != nil {
		return err
	}
	if _, ok := d.bridges[name]; ok {
		return fmt.Errorf("bridge %q already exists", name)
	}
	bc := store.BridgeConfig{Name: name, Ports: []api.PortConfig{}}
	bc.DatapathID = formatDatapathID(newDatapathID(&bc))
	now := time.Now()
	rules, err := bc.ParseRules(store.DefaultFlows)
	if err != nil {
		return err
	}
	b, err := vswitch.New(name, flow.NewTable(nil, 1).AddAll(rules, now), d.bridgeOpts)
	if err != nil {
		return err
	}
	next := d.cfg.Clone()
	next.Bridges = append(next.Bridges, bc)
	rec := store.Record{Time: now, Config: next, Flows: []store.TableEdit{{Bridge: name, Reset: true, Add: store.DefaultFlows}}}
	if err := d.save(rec); err != nil {
		b.Close()
		return err
	}
	d.bridges[name] = b
	d.log.Info("bridge added", "bridge", name)
	return nil
}

func (d *Daemon) delBridge(name string) error {
	b, err := d.bridge(name)
	if err != nil {
		return err
	}
	next := d.cfg.Clone()
	ports := next.Bridge(name).Ports
	next.Bridges = slices.DeleteFunc(next.Bridges, func(bc store.BridgeConfig) bool { return bc.Name == name })
	// Forget first, then tear down: a crash in between leaves at worst a
	// veth pair that nothing refers to, never a configuration that points
	// at ports that are gone.
	if err := d.commit(next); err != nil {
		return err
	}
	delete(d.bridges, name)
	if err := b.Close(); err != nil {
		d.log.Error("closing bridge", "bridge", name, "err", err)
	}
	for _, pc := range ports {
		d.deleteOwnedDevice(pc)
		delete(d.down, pc.Name)
		delete(d.opened, pc.Name)
		delete(d.tunnels, pc.Name)
		delete(d.carried, pc.Name)
	}
	d.log.Info("bridge deleted", "bridge", name)
	return nil
}

func (d *Daemon) addPort(bridge string, pc api.PortConfig) (err error) {
	b, err := d.bridge(bridge)
	if err != nil {
		return err
	}
	if err := ifname.Validate("port", pc.Name); err != nil {
		return err
	}
	if owner, _, ok := d.findPort(pc.Name); ok {
		return fmt.Errorf("interface %q is already a port of bridge %s", pc.Name, owner)
	}
	next := d.cfg.Clone()
	bc := next.Bridge(bridge)
	if pc.OFPort, err = allocOFPort(bc, pc.Name, pc.OFPort, time.Now()); err != nil {
		return err
	}
	if _, err := afxdp.ParseMode(pc.Mode); err != nil {
		return err
	}
	if _, err := portOptions(pc); err != nil {
		return err
	}
	if err := completePortType(&pc); err != nil {
		return err
	}
	if err := checkMTURequest(pc); err != nil {
		return err
	}
	if owner, _, ok := d.findPort(deviceOf(pc)); ok {
		return fmt.Errorf("interface %q is already a port of bridge %s", deviceOf(pc), owner)
	}
	if owner, ok := d.underlayBridge(deviceOf(pc)); ok && !pc.IsTunnel() {
		return fmt.Errorf("interface %q carries the tunnels of bridge %s (it is their underlay) and cannot also be a port", deviceOf(pc), owner)
	}
	if pc.Type == api.PortTypeInternal && veth.Exists(pc.Device) {
		// The switch end's name derives from the port's (internalDevice):
		// this pair is one a daemon made and stopped before it saved it
		// (while it held back its configuration writes, say).
		d.log.Info("deleting a leftover internal port's veth pair", "port", pc.Name, "device", pc.Device)
		d.deleteOwnedDevice(pc)
	}
	if ownsDevice(pc) {
		if err := createOwnedDevice(pc); err != nil {
			return err
		}
		defer func() {
			if err != nil {
				d.deleteOwnedDevice(pc)
			}
		}()
	}
	if err := d.attach(b, pc); err != nil {
		return err
	}
	bc.Ports = append(bc.Ports, pc)
	if err := d.commit(next); err != nil {
		b.RemovePort(pc.Name)
		delete(d.opened, pc.Name)
		delete(d.tunnels, pc.Name)
		return err
	}
	d.log.Info("port added", "bridge", bridge, "port", pc.Name, "ofport", pc.OFPort)
	return nil
}

func (d *Daemon) delPort(bridge, name string) error {
	b, err := d.bridge(bridge)
	if err != nil {
		return err
	}
	next := d.cfg.Clone()
	bc := next.Bridge(bridge)
	i := slices.IndexFunc(bc.Ports, func(pc api.PortConfig) bool { return pc.Name == name })
	if i < 0 {
		return fmt.Errorf("no port %q on bridge %s", name, bridge)
	}
	pc := bc.Ports[i]
	bc.Ports = slices.Delete(bc.Ports, i, i+1)
	releaseOFPort(bc, pc, time.Now())
	if err := d.commit(next); err != nil {
		return err
	}
	if _, wasDown := d.down[name]; wasDown {
		delete(d.down, name)
	} else if err := b.RemovePort(name); err != nil {
		d.log.Error("closing port", "bridge", bridge, "port", name, "err", err)
	}
	delete(d.opened, name)
	delete(d.tunnels, name)
	delete(d.carried, name)
	d.deleteOwnedDevice(pc)
	d.log.Info("port deleted", "bridge", bridge, "port", name)
	return nil
}

// every runs fn every interval on a goroutine of its own until d.stop is
// closed, and then closes done.
func (d *Daemon) every(interval time.Duration, done chan struct{}, fn func(now time.Time)) {
	go func() {
		defer close(done)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-d.stop:
				return
			case now := <-tick.C:
				fn(now)
			}
		}
	}()
}
