package main

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/xswitch/xswitch/control"
	"github.com/xswitch/xswitch/control/api"
	"github.com/xswitch/xswitch/internal/netns"
	"github.com/xswitch/xswitch/ofagent"
	vswitch "github.com/xswitch/xswitch/switch"
)

func (c *cli) demoCommand() *cobra.Command {
	var hosts int
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Bridge three network namespaces through xswitch and show traffic flowing",
		Long: `Bridge three network namespaces through xswitch and show traffic flowing.

The demo starts a private daemon, creates three namespaces with a veth port
each on one bridge, pings every pair, sends 64 MiB over TCP, prints the
port counters and the learned MAC addresses, and removes everything it
made, also when interrupted or when a step fails. It needs root.

With --hosts 2 it makes two hosts instead, as namespaces joined by an
underlay veth, each running an xswitch daemon of its own with a namespace
behind it, and joins their bridges with a VXLAN tunnel: pings and 64 MiB
over TCP cross it, and each host shows its tunnel and the other host's
station learned on it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			switch hosts {
			case 1:
				return runDemo(cmd.Context(), os.Stdout)
			case 2:
				return runTunnelDemo(cmd.Context(), os.Stdout)
			}
			return fmt.Errorf("--hosts %d: the demo runs on 1 host, or 2 joined by a tunnel", hosts)
		},
	}
	cmd.Flags().IntVar(&hosts, "hosts", 1, "1: three namespaces on one bridge; 2: two hosts joined by a VXLAN tunnel")
	return cmd
}

// demoHost is one namespace of the demo and its port on the bridge.
type demoHost struct {
	label, netns, port, addr string
}

// undoStack runs cleanups in the reverse order of their registration.
type undoStack []func()

func (u *undoStack) push(f func()) { *u = append(*u, f) }

func (u *undoStack) run() {
	for i := len(*u) - 1; i >= 0; i-- {
		(*u)[i]()
	}
	*u = nil
}

const demoTransferSize = 64 << 20

func runDemo(ctx context.Context, w io.Writer) error {
	if os.Geteuid() != 0 {
		return errors.New("the demo needs root: it creates network namespaces and attaches XDP programs")
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	var undo undoStack
	defer func() {
		fmt.Fprintln(w, "\n== cleaning up")
		undo.run()
		fmt.Fprintln(w, "removed the bridge, its veth pairs, the namespaces and the private daemon")
	}()

	tag := randomTag()
	dir, err := os.MkdirTemp("", "xswitch-demo-")
	if err != nil {
		return err
	}
	undo.push(func() { os.RemoveAll(dir) })

	fmt.Fprintf(w, "== starting a private xswitch daemon (socket %s)\n", filepath.Join(dir, "xswitch.sock"))
	client, closeDaemon, err := startPrivateDaemon(dir, vswitch.Options{FastPath: true})
	if err != nil {
		return err
	}
	undo.push(closeDaemon)

	hosts := []demoHost{
		{label: "a", addr: "10.99.0.1"},
		{label: "b", addr: "10.99.0.2"},
		{label: "c", addr: "10.99.0.3"},
	}
	fmt.Fprintln(w, "== creating namespaces")
	for i := range hosts {
		h := &hosts[i]
		h.netns = "xsdemo-" + tag + "-" + h.label
		h.port = "xsd" + tag + h.label
		if err := netns.Create(h.netns); err != nil {
			return err
		}
		undo.push(func() { netns.Delete(h.netns) })
		fmt.Fprintf(w, "   %s\n", h.netns)
	}

	bridge := "xsdemo" + tag
	fmt.Fprintf(w, "== xswitch add-br %s\n", bridge)
	if _, err := client.call(api.Request{Verb: api.VerbAddBridge, Bridge: bridge}); err != nil {
		return err
	}
	undo.push(func() { client.call(api.Request{Verb: api.VerbDelBridge, Bridge: bridge}) })
	for _, h := range hosts {
		fmt.Fprintf(w, "== xswitch add-port %s %s --netns %s --address %s/24\n", bridge, h.port, h.netns, h.addr)
		pc := &api.PortConfig{Name: h.port, Netns: h.netns, Address: h.addr + "/24"}
		if _, err := client.call(api.Request{Verb: api.VerbAddPort, Bridge: bridge, AddPort: pc}); err != nil {
			return err
		}
	}
	bridges, err := client.show(bridge)
	if err != nil {
		return err
	}
	fmt.Fprintln(w, "== xswitch show")
	printShow(w, bridges)

	fmt.Fprintln(w, "== ping every pair")
	for i := range hosts {
		for j := range hosts {
			if i == j {
				continue
			}
			r, err := demoPing(ctx, hosts[i], hosts[j])
			if err == nil && r.received == 0 {
				err = fmt.Errorf("ping from %s to %s: no replies", hosts[i].netns, hosts[j].addr)
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(w, "   %s -> %s: %s\n", hosts[i].netns, hosts[j].addr, r)
		}
	}

	fmt.Fprintf(w, "== TCP: %d MiB from %s to %s\n", demoTransferSize>>20, hosts[0].netns, hosts[2].netns)
	line, err := demoTransfer(ctx, hosts[0], hosts[2], demoTransferSize)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "   %s\n", line)

	if err := demoFlows(ctx, w, client, bridge, hosts[0], hosts[1]); err != nil {
		return err
	}

	if bridges, err = client.show(bridge); err != nil {
		return err
	}
	fmt.Fprintf(w, "== xswitch dump-ports %s\n", bridge)
	printDumpPorts(w, bridges[0].Ports)
	resp, err := client.call(api.Request{Verb: api.VerbFDB, Bridge: bridge})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "== xswitch fdb-show %s\n", bridge)
	printFDB(w, resp.FDB)
	return nil
}

func randomTag() string {
	var b [2]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// startPrivateDaemon serves a daemon in this process, its socket and
// configuration in dir, with bridges made with opts, and its OpenFlow
// agent, as xswitch daemon runs them.
func startPrivateDaemon(dir string, opts vswitch.Options) (*cli, func(), error) {
	sock := filepath.Join(dir, "xswitch.sock")
	ln, err := api.Listen(sock)
	if err != nil {
		return nil, nil, err
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	d, err := control.NewDaemon(control.Options{DBPath: filepath.Join(dir, "conf.json"), Log: log, Bridge: opts})
	if err != nil {
		ln.Close()
		return nil, nil, err
	}
	agent := ofagent.New(d, ofagent.Options{Log: log, Version: buildVersion().Version})
	served := make(chan struct{})
	go func() {
		api.Serve(ln, d, log)
		close(served)
	}()
	return &cli{socket: sock}, func() {
		ln.Close()
		<-served
		agent.Close()
		d.Close()
	}, nil
}

var (
	pingReceived = regexp.MustCompile(`(\d+) packets transmitted, (\d+) received`)
	pingRTT      = regexp.MustCompile(`rtt min/avg/max/mdev = ([\d.]+)/([\d.]+)/([\d.]+)`)
)

// demoFlows shows the flow table at work: a rule that drops from's ICMP
// beats NORMAL and counts what it dropped; deleting it lets pings through.
func demoFlows(ctx context.Context, w io.Writer, client *cli, bridge string, from, to demoHost) error {
	rule := "priority=100,icmp,in_port=1,actions=drop"
	fmt.Fprintf(w, "== xswitch add-flow %s %s\n", bridge, rule)
	if _, err := client.call(api.Request{Verb: api.VerbAddFlows, Bridge: bridge, Flows: []string{rule}}); err != nil {
		return err
	}
	r, err := demoPing(ctx, from, to)
	if err != nil {
		return err
	}
	if r.received != 0 {
		return fmt.Errorf("the drop rule let %d of %d echo requests through", r.received, r.sent)
	}
	fmt.Fprintf(w, "   %s -> %s: blocked, %d echo requests dropped by the rule\n", from.netns, to.addr, r.sent)
	resp, err := client.call(api.Request{Verb: api.VerbDumpFlows, Bridge: bridge})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "== xswitch dump-flows %s\n", bridge)
	for _, f := range resp.Flows {
		fmt.Fprintf(w, " %s\n", f.Text)
	}
	fmt.Fprintf(w, "== xswitch del-flows %s --strict priority=100,icmp,in_port=1\n", bridge)
	if _, err := client.call(api.Request{Verb: api.VerbDelFlows, Bridge: bridge, Match: "priority=100,icmp,in_port=1", Strict: true}); err != nil {
		return err
	}
	if r, err = demoPing(ctx, from, to); err == nil && r.received == 0 {
		err = fmt.Errorf("ping from %s to %s: no replies after the rule was deleted", from.netns, to.addr)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "   %s -> %s: %s\n", from.netns, to.addr, r)
	return nil
}

// pingResult is what ping(8) reported.
type pingResult struct {
	sent, received int
	rtt            string // "min/avg/max", empty without replies
}

func (r pingResult) String() string {
	s := fmt.Sprintf("%d/%d replies", r.received, r.sent)
	if r.rtt != "" {
		s += ", rtt min/avg/max " + r.rtt + " ms"
	}
	return s
}

// demoPing sends three echo requests to to.addr from inside from's
// namespace with ping(8). Getting no reply is not an error here: ping
// could run and say how it went.
func demoPing(ctx context.Context, from, to demoHost) (pingResult, error) {
	var out []byte
	err := netns.Do(from.netns, func() error {
		// A child forked from this thread starts in its namespace.
		cmd := exec.CommandContext(ctx, "ping", "-c", "3", "-i", "0.2", "-W", "1", to.addr)
		out, _ = cmd.CombinedOutput() // ping exits 1 when nothing answered
		return ctx.Err()
	})
	m := pingReceived.FindSubmatch(out)
	if err != nil || m == nil {
		return pingResult{}, fmt.Errorf("ping from %s to %s failed (%v):\n%s", from.netns, to.addr, err, out)
	}
	var r pingResult
	fmt.Sscan(string(m[1]), &r.sent)
	fmt.Sscan(string(m[2]), &r.received)
	if rtt := pingRTT.FindSubmatch(out); rtt != nil {
		r.rtt = fmt.Sprintf("%s/%s/%s", rtt[1], rtt[2], rtt[3])
	}
	return r, nil
}

// demoTransfer sends size random bytes over TCP from one namespace to
// another and checks that they arrive intact.
func demoTransfer(ctx context.Context, from, to demoHost, size int) (string, error) {
	var ln net.Listener
	err := netns.Do(to.netns, func() (err error) {
		ln, err = net.Listen("tcp", net.JoinHostPort(to.addr, "0"))
		return err
	})
	if err != nil {
		return "", err
	}
	defer ln.Close()
	received := make(chan [sha256.Size]byte, 1)
	recvErr := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			recvErr <- err
			return
		}
		defer c.Close()
		h := sha256.New()
		n, err := io.Copy(h, c)
		if err == nil && n != int64(size) {
			err = fmt.Errorf("received %d bytes of %d", n, size)
		}
		if err != nil {
			recvErr <- err
			return
		}
		received <- [sha256.Size]byte(h.Sum(nil))
	}()

	var conn net.Conn
	err = netns.Do(from.netns, func() (err error) {
		d := net.Dialer{Timeout: 5 * time.Second}
		conn, err = d.DialContext(ctx, "tcp", ln.Addr().String())
		return err
	})
	if err != nil {
		return "", fmt.Errorf("connecting from %s to %s: %w", from.netns, ln.Addr(), err)
	}
	stopWatch := context.AfterFunc(ctx, func() { conn.Close(); ln.Close() })
	defer stopWatch()
	chunk := make([]byte, 1<<20)
	rand.Read(chunk)
	sent := sha256.New()
	start := time.Now()
	for range size / len(chunk) {
		sent.Write(chunk)
		if _, err := conn.Write(chunk); err != nil {
			conn.Close()
			return "", fmt.Errorf("sending: %w", err)
		}
	}
	conn.Close()
	select {
	case sum := <-received:
		elapsed := time.Since(start)
		if sum != [sha256.Size]byte(sent.Sum(nil)) {
			return "", errors.New("the data arrived corrupted: checksums differ")
		}
		return fmt.Sprintf("%d MiB arrived intact (sha256 matches) in %.2fs: %.2f Gbit/s",
			size>>20, elapsed.Seconds(), float64(size)*8/elapsed.Seconds()/1e9), nil
	case err := <-recvErr:
		return "", fmt.Errorf("receiving: %w", err)
	case <-time.After(2 * time.Minute):
		return "", errors.New("the transfer did not finish within 2 minutes")
	}
}
