// Package control is xswitch's control plane: the daemon that owns the
// bridges, the protocol its clients speak over a unix socket, and the
// configuration it persists.
//
// The protocol is one JSON request and one JSON response per connection.
// Responses carry structured data; formatting for people is the client's
// business, so that scripts can ask for the same data as JSON.
package control

import "github.com/xswitch/xswitch/port"

// Request is what a client sends.
type Request struct {
	Verb    string      `json:"verb"`
	Bridge  string      `json:"bridge,omitempty"`
	Port    string      `json:"port,omitempty"`
	AddPort *PortConfig `json:"add_port,omitempty"`
}

// Verbs.
const (
	VerbAddBridge = "add-br"
	VerbDelBridge = "del-br"
	VerbAddPort   = "add-port"
	VerbDelPort   = "del-port"
	VerbShow      = "show"
	VerbFDB       = "fdb-show"
)

// Response is what the daemon answers. Exactly one of Error and the
// payloads is meaningful.
type Response struct {
	Error   string         `json:"error,omitempty"`
	Bridges []BridgeStatus `json:"bridges,omitempty"`
	FDB     []FDBEntry     `json:"fdb,omitempty"`
}

// BridgeStatus is a bridge as `show`, `list-ports` and `dump-ports` see it.
type BridgeStatus struct {
	Name  string       `json:"name"`
	Ports []PortStatus `json:"ports"`
}

// PortStatus is a port's configuration, how it was opened and its counters.
type PortStatus struct {
	PortConfig
	OFPort uint16 `json:"ofport"`
	// Error says why the port is down; empty for a working port.
	Error string    `json:"error,omitempty"`
	Info  port.Info `json:"info"`
	Stats PortStats `json:"stats"`
}

// PortStats are a port's counters. Rx and Tx are the switch's view; the
// Kernel ones are the AF_XDP sockets' own (XDP_STATISTICS).
type PortStats struct {
	RxPackets uint64     `json:"rx_packets"`
	RxBytes   uint64     `json:"rx_bytes"`
	RxDropped uint64     `json:"rx_dropped"`
	TxPackets uint64     `json:"tx_packets"`
	TxBytes   uint64     `json:"tx_bytes"`
	TxDropped uint64     `json:"tx_dropped"`
	Kernel    port.Stats `json:"kernel"`
}

// FDBEntry is one learned MAC address.
type FDBEntry struct {
	Port   uint16 `json:"port"`
	VLAN   uint16 `json:"vlan"`
	MAC    string `json:"mac"`
	AgeSec int    `json:"age"`
}
