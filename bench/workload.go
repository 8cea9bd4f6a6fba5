package bench

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/xswitch/xswitch/header"
)

// Workload is the traffic a measurement sends through a case, or the
// configuration it gives a case's switch. UDP, TCP, Ping, TCPCRR, Conns,
// AddPort, Ports and ParseWorkload make them.
type Workload struct {
	// Name is what ParseWorkload reads and Result.Workload says: udpN,
	// tcp, ping, tcpcrr, connsN, addport or portsN.
	Name string
	Kind WorkloadKind
	Size int // of each frame of a UDP or conns workload
	// Flows is how many UDP flows the frames take turns in (see setFlow),
	// or a conns workload's connections; 0 or 1: one.
	Flows int
	// Ports is how many ports a ports workload adds in one transaction.
	Ports int
}

// FirstFlowPort is the UDP source port of a many-flow workload's first
// flow: above every port ManyFlows's rules name, so that its flows take
// the bench frame's way through them.
const FirstFlowPort = 20000

// MaxFlows is the most flows a UDP workload spreads over: one per source
// port from FirstFlowPort up (setFlow).
const MaxFlows = 65535 - FirstFlowPort

// WorkloadKind says which of Result's figures a workload yields.
type WorkloadKind int

const (
	KindUDP     WorkloadKind = iota + 1 // frames and bits per second
	KindTCP                             // bits per second
	KindPing                            // round-trip times
	KindCRR                             // TCP connections per second
	KindConns                           // a switch's memory per connection it tracks
	KindAddPort                         // from ovs-vsctl add-port to the port forwarding
	KindPorts                           // many ports added in one ovs-vsctl transaction
)

// MaxConnections is the most connections a conns workload makes: the
// default limit of both OVS's userspace tracker and xswitch's.
const MaxConnections = 3000000

// MaxPorts is the most ports a ports workload adds: OpenFlow's port
// numbers, less the few a switch keeps.
const MaxPorts = 65000

// defaultPorts is how many ports the ports workload adds when its name
// does not say.
const defaultPorts = 1000

// connsFrameSize is the size of a conns workload's frames.
const connsFrameSize = 64

// UDP is the generator's N-byte UDP frames (without FCS) as fast as the
// kernel transmits them, in frames and bits per second into the receiver.
func UDP(size int) Workload {
	return Workload{Name: "udp" + strconv.Itoa(size), Kind: KindUDP, Size: size}
}

// TCP is one iperf3 stream from the generator's namespace to the
// receiver's, in bits per second the receiver reads.
func TCP() Workload { return Workload{Name: "tcp", Kind: KindTCP} }

// Ping is ICMP echo round-trip time at idle, one request every
// pingInterval.
func Ping() Workload { return Workload{Name: "ping", Kind: KindPing} }

// TCPCRR is TCP connection setup: many short connections from the
// generator's namespace to the receiver's, each a one-byte request and
// response (see measureCRR), in connections per second.
func TCPCRR() Workload { return Workload{Name: "tcpcrr", Kind: KindCRR} }

// Conns is n UDP connections through a switch that tracks them, a frame
// of each from the generator's namespace until the receiver has had one
// of every connection (see measureConns): the switch's resident memory
// before and after, over the connections. connsN.
func Conns(n int) Workload {
	return Workload{Name: "conns" + strconv.Itoa(n), Kind: KindConns, Size: connsFrameSize, Flows: n}
}

// AddPort is the time from ovs-vsctl add-port of a veth, whose peer is
// in the generator's namespace, to a datagram from there reaching the
// receiver through the port: see measureAddPort.
func AddPort() Workload { return Workload{Name: "addport", Kind: KindAddPort} }

// Ports is n internal ports added to a bridge in one ovs-vsctl
// transaction: the time until ovs-vsctl returns, the switch having
// applied it, and until every port has its OpenFlow port number. portsN.
func Ports(n int) Workload {
	return Workload{Name: "ports" + strconv.Itoa(n), Kind: KindPorts, Ports: n}
}

// UDPFlows is UDP(size) with its frames spread over flows flows, in turn:
// udpNxF.
func UDPFlows(size, flows int) Workload {
	w := UDP(size)
	w.Name, w.Flows = fmt.Sprintf("udp%dx%d", size, flows), flows
	return w
}

// ParseWorkload reads a workload's name: "udp" and a frame size (udp64,
// udp1500), optionally "x" and a number of flows (udp64x1000), "tcp",
// "ping", "tcpcrr", "conns" and a number of connections (conns1000000),
// "addport", or "ports" and a number of ports (ports1000; "ports" alone is
// ports1000). Whether a frame size fits the veths' MTU Run checks.
func ParseWorkload(name string) (Workload, error) {
	switch name {
	case "tcp":
		return TCP(), nil
	case "ping":
		return Ping(), nil
	case "tcpcrr":
		return TCPCRR(), nil
	case "addport":
		return AddPort(), nil
	case "ports":
		return Ports(defaultPorts), nil
	}
	if digits, ok := strings.CutPrefix(name, "ports"); ok {
		n, err := strconv.Atoi(digits)
		if err != nil {
			return Workload{}, fmt.Errorf("workload %q: %q is not a number of ports", name, digits)
		}
		w := Ports(n)
		return w, w.validate(maxMTU)
	}
	if digits, ok := strings.CutPrefix(name, "conns"); ok {
		n, err := strconv.Atoi(digits)
		if err != nil {
			return Workload{}, fmt.Errorf("workload %q: %q is not a number of connections", name, digits)
		}
		w := Conns(n)
		return w, w.validate(maxMTU)
	}
	digits, ok := strings.CutPrefix(name, "udp")
	if !ok {
		return Workload{}, fmt.Errorf("unknown workload %q: want udpSIZE (such as udp64), tcp, ping, tcpcrr, connsN, addport or portsN", name)
	}
	digits, flowDigits, many := strings.Cut(digits, "x")
	size, err := strconv.Atoi(digits)
	if err != nil {
		return Workload{}, fmt.Errorf("workload %q: %q is not a frame size in bytes", name, digits)
	}
	w := UDP(size)
	if many {
		flows, err := strconv.Atoi(flowDigits)
		if err != nil {
			return Workload{}, fmt.Errorf("workload %q: %q is not a number of flows", name, flowDigits)
		}
		w = UDPFlows(size, flows)
	}
	if err := w.validate(maxMTU); err != nil {
		return Workload{}, err
	}
	return w, nil
}

// validate checks w for veths of MTU mtu (0: 1500): a UDP frame must fit
// it (see MaxFrameSize).
func (w Workload) validate(mtu int) error {
	if w.Name == "" {
		return errors.New("a workload needs a name")
	}
	switch w.Kind {
	case KindUDP:
		if limit := MaxFrameSize(mtu); w.Size < MinFrameSize || w.Size > limit {
			return fmt.Errorf("workload %q: frame size %d is outside %d..%d (MTU %d)", w.Name, w.Size, MinFrameSize, limit, limit-header.EthernetLen)
		}
		if w.Flows < 0 || w.Flows > MaxFlows {
			return fmt.Errorf("workload %q: %d flows is outside 1..%d", w.Name, w.Flows, MaxFlows)
		}
	case KindConns:
		if w.Flows < 2 || w.Flows > MaxConnections {
			return fmt.Errorf("workload %q: %d connections is outside 2..%d", w.Name, w.Flows, MaxConnections)
		}
	case KindPorts:
		if w.Ports < 1 || w.Ports > MaxPorts {
			return fmt.Errorf("workload %q: %d ports is outside 1..%d", w.Name, w.Ports, MaxPorts)
		}
	case KindTCP, KindPing, KindCRR, KindAddPort:
	default:
		return fmt.Errorf("workload %q was not made by UDP, TCP, Ping, TCPCRR, Conns, AddPort, Ports or ParseWorkload", w.Name)
	}
	return nil
}
