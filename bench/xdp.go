package bench

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"net"
	"slices"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"

	benchbpf "github.com/xswitch/xswitch/bench/bpf"
	"github.com/xswitch/xswitch/internal/netns"
)

// counter counts the frames arriving on one interface and drops them,
// and marks which of the generator's flows arrived.
type counter struct {
	objs benchbpf.BenchObjects
	link link.Link
	// flows is rx_flows's memory, a bit per flow; nil when the counter
	// marks none.
	flows *ebpf.Memory
}

// loadBench loads the bench's programs into objs: xdp_gen spreading its
// frames over genFlows flows, xdp_count marking which of countFlows flows
// (0: none) arrive (see setFlow).
func loadBench(objs *benchbpf.BenchObjects, genFlows, countFlows int) error {
	spec, err := benchbpf.LoadBench()
	if err != nil {
		return err
	}
	for name, v := range map[string]any{
		benchbpf.BenchVarGenFlows: uint32(max(genFlows, 1)), benchbpf.BenchVarGenFirstPort: uint16(FirstFlowPort),
		benchbpf.BenchVarGenSrcPorts: uint32(MaxFlows), benchbpf.BenchVarGenFirstDstPort: uint16(benchDstPort),
		benchbpf.BenchVarCountFlows: uint32(countFlows),
	} {
		if err := spec.Variables[name].Set(v); err != nil {
			return err
		}
	}
	spec.Maps[benchbpf.BenchMapRxFlows].MaxEntries = uint32(max((countFlows+63)/64, 1))
	return spec.LoadAndAssign(objs, nil)
}

// loadCounter loads xdp_count, marking which of flows flows (0: none)
// arrive, attached nowhere yet.
func loadCounter(flows int) (_ *counter, err error) {
	c := &counter{}
	if err := loadBench(&c.objs, 0, flows); err != nil {
		return nil, fmt.Errorf("load the counter program: %w", err)
	}
	if flows > 0 {
		if c.flows, err = c.objs.RxFlows.Memory(); err != nil {
			c.objs.Close()
			return nil, fmt.Errorf("map the counter's flows: %w", err)
		}
	}
	return c, nil
}

// attachCounter puts xdp_count on iface inside namespace ns, marking which
// of flows flows (0: none) arrive.
func attachCounter(ns, iface string, flows int) (*counter, error) {
	c, err := loadCounter(flows)
	if err != nil {
		return nil, err
	}
	err = netns.Do(ns, func() (err error) {
		c.link, err = attachXDP(iface, c.objs.XdpCount)
		return err
	})
	if err != nil {
		c.objs.Close()
		return nil, fmt.Errorf("namespace %q: %w", ns, err)
	}
	return c, nil
}

// read sums the per-CPU counters.
func (c *counter) read() (packets, bytes uint64, err error) {
	var perCPU []benchbpf.BenchCounters
	if err := c.objs.RxCounters.Lookup(uint32(0), &perCPU); err != nil {
		return 0, 0, fmt.Errorf("read the receiver's counters: %w", err)
	}
	for _, v := range perCPU {
		packets += v.Packets
		bytes += v.Bytes
	}
	return packets, bytes, nil
}

// flowsSeen counts the flows of which a frame has arrived.
func (c *counter) flowsSeen() (int, error) {
	words := make([]byte, c.flows.Size())
	if _, err := c.flows.ReadAt(words, 0); err != nil {
		return 0, fmt.Errorf("read the counter's flows: %w", err)
	}
	n := 0
	for w := range slices.Chunk(words, 8) {
		n += bits.OnesCount64(binary.NativeEndian.Uint64(w))
	}
	return n, nil
}

func (c *counter) close() error {
	var err error
	if c.link != nil {
		err = c.link.Close()
	}
	return errors.Join(err, c.objs.Close())
}

// redirector is xdp_redirect_to attached to one interface.
type redirector struct {
	prog *ebpf.Program
	link link.Link
}

// attachRedirect makes every frame arriving on from leave through to, by
// XDP_REDIRECT in the kernel. Both are interfaces of this namespace.
func attachRedirect(from, to string) (*redirector, error) {
	dst, err := net.InterfaceByName(to)
	if err != nil {
		return nil, fmt.Errorf("redirect target %q: %w", to, err)
	}
	spec, err := benchbpf.LoadBench()
	if err != nil {
		return nil, fmt.Errorf("load the redirect program: %w", err)
	}
	if err := spec.Variables[benchbpf.BenchVarRedirectIfindex].Set(uint32(dst.Index)); err != nil {
		return nil, fmt.Errorf("set the redirect target: %w", err)
	}
	coll, err := ebpf.NewCollection(spec)
	if err != nil {
		return nil, fmt.Errorf("load the redirect program: %w", err)
	}
	// Only the program stays; the collection's other objects go.
	r := &redirector{prog: coll.DetachProgram(benchbpf.BenchProgXdpRedirectTo)}
	coll.Close()
	if r.link, err = attachXDP(from, r.prog); err != nil {
		r.prog.Close()
		return nil, err
	}
	return r, nil
}

func (r *redirector) close() error {
	return errors.Join(r.link.Close(), r.prog.Close())
}

// attachXDP attaches prog to iface of the calling thread's namespace in
// native mode: veth runs XDP in its driver, and only there do frames that
// other XDP programs redirect arrive.
func attachXDP(iface string, prog *ebpf.Program) (link.Link, error) {
	dev, err := net.InterfaceByName(iface)
	if err != nil {
		return nil, fmt.Errorf("interface %q: %w", iface, err)
	}
	l, err := link.AttachXDP(link.XDPOptions{Program: prog, Interface: dev.Index, Flags: link.XDPDriverMode})
	if err != nil {
		return nil, fmt.Errorf("attach XDP program %s to %q: %w", prog, iface, err)
	}
	return l, nil
}
