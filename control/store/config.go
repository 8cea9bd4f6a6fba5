package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"github.com/xswitch/xswitch/control/api"
)

// Config is everything the daemon persists: what a restart must restore.
// While the daemon runs, its Config describes bridges and ports only: the
// flow tables live in the bridges, and are written out (Flows) only in a
// snapshot (see store.go).
type Config struct {
	// Generation numbers the snapshot, so that the journal of changes made
	// after it can tell it from an older one.
	Generation uint64         `json:"generation,omitempty"`
	Bridges    []BridgeConfig `json:"bridges"`
	// Conntrack are the settings of the daemon's connection tracker, the
	// one table its bridges share; nil: OVS's defaults. Never modified
	// in place, only replaced.
	Conntrack *ConntrackConfig `json:"conntrack,omitempty"`
}

// ConntrackConfig are the connection tracker's settings, as the
// ct-set-maxconns, ct-set-limits, ct-*-tcp-seq-chk and add-zone-tp verbs
// set them.
type ConntrackConfig struct {
	// MaxConns is the most connections the table holds; nil: the
	// default (conntrack.DefaultMaxConns).
	MaxConns *uint32 `json:"maxconns,omitempty"`
	// DefaultLimit is the limit of the zones without their own; 0: none.
	DefaultLimit uint32 `json:"default_zone_limit,omitempty"`
	// ZoneLimits are the zones' own limits, by zone.
	ZoneLimits []ZoneLimit `json:"zone_limits,omitempty"`
	// TCPSeqCheckOff says that TCP sequence checking is off.
	TCPSeqCheckOff bool `json:"tcp_seq_chk_off,omitempty"`
	// ZoneTimeouts are the zones' timeout policies (add-zone-tp), by
	// zone.
	ZoneTimeouts []api.ZoneTimeouts `json:"zone_timeouts,omitempty"`
}

// ZoneLimit is one zone's own limit of connections.
type ZoneLimit struct {
	Zone  uint16 `json:"zone"`
	Limit uint32 `json:"limit"`
}

// IsDefault says that c changes nothing of the defaults.
func (c *ConntrackConfig) IsDefault() bool {
	return c.MaxConns == nil && c.DefaultLimit == 0 && len(c.ZoneLimits) == 0 && !c.TCPSeqCheckOff && len(c.ZoneTimeouts) == 0
}

// BridgeConfig is one bridge, its ports and its flow table.
type BridgeConfig struct {
	Name  string           `json:"name"`
	Ports []api.PortConfig `json:"ports"`
	// Flows are the bridge's rules in ovs-ofctl syntax, highest priority
	// first; a bridge without rules has an empty list. A configuration
	// written before flow tables has none at all: the bridge then gets the
	// default table.
	Flows []string `json:"flows"`
	// Installed says when each of Flows was installed, so that hard
	// timeouts run on across a restart: the first Count rules at the first
	// time, the next Count at the next, and so on (rules come in bulk, and
	// one add-flows installs all of its rules at once). A configuration
	// written before install times were kept has none: the rules count from
	// the start.
	Installed []InstallTime `json:"installed,omitempty"`
	// Groups are the bridge's groups in ovs-ofctl syntax (add-group's), by
	// id.
	Groups []string `json:"groups,omitempty"`
	// Meters are the bridge's meters in ovs-ofctl syntax (add-meter's), by
	// id. Unlike rules and groups, they are part of the configuration:
	// they change seldom, and a change saves it whole. Never modified in
	// place, only replaced.
	Meters []string `json:"meters,omitempty"`
	// Released are OpenFlow port numbers that ports had until lately,
	// kept from reuse for a while.
	Released []ReleasedPort `json:"released_ofports,omitempty"`
	// RSTPEnable and OtherConfig are OVS's Bridge columns of those names,
	// as the set verb writes them. OtherConfig is never modified in place,
	// only replaced, so that a clone may share it.
	RSTPEnable  bool              `json:"rstp_enable,omitempty"`
	OtherConfig map[string]string `json:"other_config,omitempty"`
	// Controllers are the bridge's OpenFlow controller targets, in their
	// canonical form (as get-controller prints them), and FailMode what it
	// does while none is connected: "standalone", "secure", or "" for not
	// set (standalone), as OVS's columns of those names.
	// Controllers is never modified in place, only replaced.
	Controllers []string `json:"controllers,omitempty"`
	FailMode    string   `json:"fail_mode,omitempty"`
	// DatapathID is the datapath id chosen when the bridge was created,
	// 16 hex digits; other_config:datapath-id overrides it. A
	// configuration written before datapath ids were kept has none: the
	// bridge gets one when it is loaded.
	DatapathID string `json:"datapath_id,omitempty"`
}

// InstallTime is when a run of a bridge's rules was installed.
type InstallTime struct {
	At    time.Time `json:"at"`
	Count int       `json:"count"`
}

// ReleasedPort is the number a deleted port had, and when it was deleted.
type ReleasedPort struct {
	Name   string    `json:"name"`
	OFPort uint16    `json:"ofport"`
	Time   time.Time `json:"time"`
}

// Bridge returns the named bridge, nil if c has none of that name.
func (c *Config) Bridge(name string) *BridgeConfig {
	for i := range c.Bridges {
		if c.Bridges[i].Name == name {
			return &c.Bridges[i]
		}
	}
	return nil
}

// Clone returns a deep copy, so that a change can be built aside and
// committed only once it is saved.
func (c *Config) Clone() *Config {
	out := &Config{Generation: c.Generation, Bridges: make([]BridgeConfig, len(c.Bridges)), Conntrack: c.Conntrack}
	for i, b := range c.Bridges {
		out.Bridges[i] = BridgeConfig{
			Name:        b.Name,
			Ports:       append([]api.PortConfig(nil), b.Ports...),
			Flows:       b.Flows,     // never modified in place, only replaced
			Installed:   b.Installed, // likewise
			Groups:      b.Groups,    // likewise
			Meters:      b.Meters,    // likewise
			Released:    append([]ReleasedPort(nil), b.Released...),
			RSTPEnable:  b.RSTPEnable,
			OtherConfig: b.OtherConfig, // likewise
			Controllers: b.Controllers, // likewise
			FailMode:    b.FailMode,
			DatapathID:  b.DatapathID,
		}
	}
	return out
}

// dropEmpty makes an empty other_config, an empty list of controllers,
// or conntrack settings of only defaults, none, as saving leaves them
// out, so that a configuration reads back as it was written.
func (c *Config) dropEmpty() {
	if c.Conntrack != nil && c.Conntrack.IsDefault() {
		c.Conntrack = nil
	}
	for i := range c.Bridges {
		bc := &c.Bridges[i]
		if len(bc.OtherConfig) == 0 {
			bc.OtherConfig = nil
		}
		if len(bc.Controllers) == 0 {
			bc.Controllers = nil
		}
		for j := range bc.Ports {
			if pc := &bc.Ports[j]; len(pc.OtherConfig) == 0 {
				pc.OtherConfig = nil
			}
		}
	}
}

// readSnapshot reads the snapshot at path and holds it to rules. A
// missing file is an empty configuration.
func readSnapshot(path string, rules Rules) (*Config, error) {
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
		// not what writeSnapshot wrote: refuse it rather than guess.
		if _, tokErr := dec.Token(); tokErr != io.EOF {
			err = errors.New("data after the configuration")
		}
	}
	if err == nil {
		err = rules.check(&c)
	}
	if err != nil {
		return nil, corrupt(path, err)
	}
	return &c, nil
}

// corrupt is the error for a configuration file that cannot be used.
func corrupt(path string, err error) error {
	return fmt.Errorf("configuration %s is corrupt (%v); fix or move it away, xswitch will not overwrite it", path, err)
}

// Save writes c to path as a snapshot, atomically: a crash at any moment
// leaves either the old file or the new one, never a torn one.
func Save(path string, c *Config) error {
	data, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(path, append(data, '\n'))
}

// writeFileAtomic replaces path with data through a temporary file in the
// same directory, synced before and after the rename.
func writeFileAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, tempPrefix(path)+"*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after a successful rename there is nothing to remove
	if _, err := tmp.Write(data); err != nil {
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
	return syncDir(dir)
}

// syncDir makes a rename or a new file in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// tempPrefix names the temporary files of saves to path: hidden, and
// marked as xswitch's, so that clearing those a crash left behind can
// never touch a file of anyone else's.
func tempPrefix(path string) string {
	return "." + filepath.Base(path) + ".xswitch-save-"
}

// removeStaleTemporaries removes the temporary files that saves to path
// left when a crash interrupted them: only names os.CreateTemp made from
// tempPrefix.
func removeStaleTemporaries(path string) error {
	dir := filepath.Dir(path)
	ours := regexp.MustCompile(`^` + regexp.QuoteMeta(tempPrefix(path)) + `[0-9]+$`)
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		if ours.MatchString(e.Name()) {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
				return err
			}
		}
	}
	return nil
}
