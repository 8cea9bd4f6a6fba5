package api

// PortConfig is one port as the user asked for it: what add-port sends,
// and what the daemon keeps of it.
type PortConfig struct {
	Name   string `json:"name"`
	OFPort uint16 `json:"ofport,omitempty"`
	Mode   string `json:"mode,omitempty"`
	Queues int    `json:"queues,omitempty"`
	// Netns, Peer and Address describe a veth pair that xswitch created and
	// so owns: it recreates the pair after a reboot and deletes it with the
	// port. A port without Netns is an existing interface it only attaches.
	Netns   string `json:"netns,omitempty"`
	Peer    string `json:"peer,omitempty"`
	Address string `json:"address,omitempty"`
	// Tag, Trunks and VLANMode are the port's VLAN configuration, as OVS's
	// columns of the same names (see vswitch.VLANConfig); none of them is a
	// trunk of every VLAN.
	Tag      uint16   `json:"tag,omitempty"`
	Trunks   []uint16 `json:"trunks,omitempty"`
	VLANMode string   `json:"vlan_mode,omitempty"`
	// Type is a device xswitch creates and owns besides a --netns veth
	// pair: PortTypeTap or PortTypeInternal; or a tunnel, which has no
	// device: PortTypeVXLAN or PortTypeGeneve; "" for the other ports.
	Type string `json:"type,omitempty"`
	// Owner is the user ID that may open a tap without CAP_NET_ADMIN; 0
	// sets none, since root needs none.
	Owner int `json:"owner,omitempty"`
	// Device is the interface the AF_XDP socket opens when it is not Name:
	// the switch end of an internal port's veth pair, whose peer is Name.
	Device string `json:"device,omitempty"`
	// OtherConfig is OVS's Port column of that name, as the set verb
	// writes it; like a bridge's, it is only ever replaced.
	OtherConfig map[string]string `json:"other_config,omitempty"`
	// MTU is the MTU of the interfaces add-port creates (both ends of a
	// veth pair, a tap); 0 leaves the kernel's default.
	MTU int `json:"mtu,omitempty"`
	// RemoteIP, LocalIP, Key and DstPort describe a tunnel port
	// (PortTypeVXLAN, PortTypeGeneve), as OVS's options of those names:
	// the remote endpoint; the local one ("": the route's source
	// address); the VNI, or KeyFlow ("": 0); the UDP port (0: the type's).
	RemoteIP string `json:"remote_ip,omitempty"`
	LocalIP  string `json:"local_ip,omitempty"`
	Key      string `json:"key,omitempty"`
	DstPort  uint16 `json:"dst_port,omitempty"`
}

// Port types that xswitch creates the device of.
const (
	PortTypeTap      = "tap"      // a persistent tap device, for a VM monitor to open
	PortTypeInternal = "internal" // the host's (or --netns's) own interface on the bridge
)

// Tunnel port types.
const (
	PortTypeVXLAN  = "vxlan"
	PortTypeGeneve = "geneve"
)

// KeyFlow is the --key that makes a tunnel's VNI the frame's tun_id.
const KeyFlow = "flow"

// IsTunnel reports whether the port is a tunnel.
func (pc PortConfig) IsTunnel() bool {
	return pc.Type == PortTypeVXLAN || pc.Type == PortTypeGeneve
}

// Tables, as ovs-vsctl names them: the set, get, add, remove and clear
// verbs' Request.Table.
const (
	TableBridge = "Bridge"
	TablePort   = "Port"
)
