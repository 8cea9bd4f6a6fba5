package control

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Config is everything the daemon persists: what a restart must restore.
type Config struct {
	Bridges []BridgeConfig `json:"bridges"`
}

// BridgeConfig is one bridge, its ports and its flow table.
type BridgeConfig struct {
	Name  string       `json:"name"`
	Ports []PortConfig `json:"ports"`
	// Flows are the bridge's rules in ovs-ofctl syntax, highest priority
	// first. A configuration written before flow tables has none: the
	// bridge then gets the default table.
	Flows []string `json:"flows"`
}

// PortConfig is one port as the user asked for it.
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
	// pair: PortTypeTap or PortTypeInternal; "" for the other ports.
	Type string `json:"type,omitempty"`
	// Owner is the user ID that may open a tap without CAP_NET_ADMIN; 0
	// sets none, since root needs none.
	Owner int `json:"owner,omitempty"`
	// Device is the interface the AF_XDP socket opens when it is not Name:
	// the switch end of an internal port's veth pair, whose peer is Name.
	Device string `json:"device,omitempty"`
}

// Port types that xswitch creates the device of.
const (
	PortTypeTap      = "tap"      // a persistent tap device, for a VM monitor to open
	PortTypeInternal = "internal" // the host's (or --netns's) own interface on the bridge
)

// device is the interface the port's AF_XDP socket is bound to.
func (pc PortConfig) device() string {
	if pc.Device != "" {
		return pc.Device
	}
	return pc.Name
}

func (c *Config) bridge(name string) *BridgeConfig {
	for i := range c.Bridges {
		if c.Bridges[i].Name == name {
			return &c.Bridges[i]
		}
	}
	return nil
}

// clone returns a deep copy, so that a change can be built aside and
// committed only once it is saved.
func (c *Config) clone() *Config {
	out := &Config{Bridges: make([]BridgeConfig, len(c.Bridges))}
	for i, b := range c.Bridges {
		out.Bridges[i] = BridgeConfig{
			Name:  b.Name,
			Ports: append([]PortConfig(nil), b.Ports...),
			Flows: b.Flows, // never modified in place, only replaced
		}
	}
	return out
}

// LoadConfig reads the configuration at path. A missing file is an empty
// configuration; a file that does not parse is an error, and the file is
// left alone for the operator to inspect.
func LoadConfig(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &Config{}, nil
	}
	if err != nil {
		return nil, err
	}
	var c Config
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	err = dec.Decode(&c)
	if err == nil {
		// A second value or stray bytes after the first mean the file is
		// not what SaveConfig wrote: refuse it rather than guess.
		if _, tokErr := dec.Token(); tokErr != io.EOF {
			err = errors.New("data after the configuration")
		}
	}
	if err != nil {
		return nil, fmt.Errorf("configuration %s is corrupt (%v); fix or move it away, xswitch will not overwrite it", path, err)
	}
	return &c, nil
}

// SaveConfig writes c to path atomically: a crash at any moment leaves
// either the old file or the new one, never a torn one.
func SaveConfig(path string, c *Config) error {
	data, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tmpPrefix := filepath.Base(path) + ".tmp"
	// A save that a crash interrupted left its temporary file; without
	// this, every crash would leave one more copy of the configuration.
	if entries, err := os.ReadDir(dir); err == nil {
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), tmpPrefix) {
				os.Remove(filepath.Join(dir, e.Name()))
			}
		}
	}
	tmp, err := os.CreateTemp(dir, tmpPrefix+"*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after a successful rename there is nothing to remove
	if _, err := tmp.Write(append(data, '\n')); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	// The rename is durable only once the directory is.
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
