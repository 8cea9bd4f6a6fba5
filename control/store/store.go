// Package store keeps the daemon's configuration on disk: the snapshot,
// the journal of changes made since, and the lock that keeps a second
// daemon off them; it loads what a restart finds and compacts the
// journal into a new snapshot. It knows the configuration's types and a
// bridge's rules in flow syntax, and what its files hold; it never
// touches a bridge, a port or the host's interfaces, and what makes a
// configuration valid is its user's to say (Rules): the store keeps
// configurations, the daemon's verbs decide what they may hold.
//
// The daemon keeps its configuration as OVSDB keeps a database: a snapshot
// of the whole (the --db file) and a journal of the changes made since
// (the same path with ".journal" added), one change a line, synced before
// the verb that made it returns. A change costs what it says, not what the
// configuration holds: one add-flow on a table of 200,000 rules appends one
// line, where rewriting the snapshot would write 12 MB. When the journal
// outgrows the snapshot (and at start-up, when it holds anything or the
// loaded configuration was upgraded: a bridge given the datapath id it
// lacked), the store writes a new snapshot and starts a new journal:
// compaction.
//
// Each journal line is a CRC-32C of its JSON, a space, and the JSON. A
// crash mid-append leaves a torn last line: that change was never
// acknowledged, and loading ignores it. A bad line with good ones after it
// is corruption, which the daemon refuses to start on, as it refuses a
// snapshot it cannot read. The journal's first line names the snapshot
// generation it follows, so that the journal a crash in the middle of a
// compaction leaves beside the new snapshot is recognised as already in it.
//
// An open store also holds an exclusive flock on a lock file beside the
// configuration (".lock" added), holding the daemon's pid, while it runs:
// two daemons on one configuration would overwrite each other's changes
// and delete each other's devices.
package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xswitch/xswitch/flow"
)

// MinCompaction is the journal size below which a store never compacts,
// so that a small configuration is not rewritten every few changes.
var MinCompaction int64 = 1 << 20

// Rules are what a store holds the configurations it loads to, a
// snapshot's and each change's, besides what its files must hold: the
// store's user's rules, not its own.
type Rules struct {
	// Validate refuses a configuration that no verb would have made (a
	// file edited by hand, or written by a daemon with a bug since
	// fixed); nil accepts any.
	Validate func(*Config) error
	// Upgrade fills in, once a configuration is loaded, what one saved by
	// an earlier version lacks, and reports whether it did, which a
	// store then keeps in a new snapshot; nil changes nothing.
	Upgrade func(*Config) bool
}

// check holds c, as read from a file, to r and to the store's own rules.
func (r Rules) check(c *Config) error {
	c.dropEmpty()
	if r.Validate != nil {
		if err := r.Validate(c); err != nil {
			return err
		}
	}
	for _, bc := range c.Bridges {
		counted := 0
		for _, run := range bc.Installed {
			if run.Count < 1 {
				return fmt.Errorf("bridge %s: install times for %d rules", bc.Name, run.Count)
			}
			counted += run.Count
		}
		if len(bc.Installed) > 0 && counted != len(bc.Flows) {
			return fmt.Errorf("bridge %s: install times for %d rules, but %d rules", bc.Name, counted, len(bc.Flows))
		}
	}
	return nil
}

// Record is one change: a new configuration of bridges and ports, edits
// to flow tables, or both, applied in that order.
type Record struct {
	Time time.Time `json:"time"`
	// Config, when given, replaces everything but the flow tables: those
	// of bridges it keeps stay, those of bridges it drops go, and a new
	// bridge starts with an empty table (which Flows then fills).
	Config *Config     `json:"config,omitempty"`
	Flows  []TableEdit `json:"flows,omitempty"`
}

// TableEdit is a change to one bridge's flow table, its rules and groups
// in ovs-ofctl syntax. Removed and modified rules are found by their match
// and priority; added ones are installed at the record's time.
type TableEdit struct {
	Bridge string   `json:"bridge"`
	Reset  bool     `json:"reset,omitempty"` // empty the table of rules first
	Remove []string `json:"remove,omitempty"`
	Modify []string `json:"modify,omitempty"` // the rules with their new actions
	Add    []string `json:"add,omitempty"`
	// RemoveGroups are removed (flow.GroupAllGroups: every group), then
	// Groups put in, in add-group's syntax, in the place of those of
	// their ids.
	RemoveGroups []uint32 `json:"remove_groups,omitempty"`
	Groups       []string `json:"groups,omitempty"`
}

// journalHeader is the journal's first line.
type journalHeader struct {
	Generation uint64 `json:"generation"`
}

// state is what the store holds: the configuration of bridges and ports
// (no Flows), and each bridge's flow table.
type state struct {
	cfg    *Config
	tables map[string]*flow.Table
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// JournalPath is where the journal of the configuration at path is.
func JournalPath(path string) string { return path + ".journal" }

func lockPath(path string) string { return path + ".lock" }

// journalLine encodes v as one journal line.
func journalLine(v any) ([]byte, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	line := fmt.Appendf(nil, "%08x ", crc32.Checksum(data, castagnoli))
	return append(append(line, data...), '\n'), nil
}

// decodeJournalLine decodes one journal line, without its newline, into v.
func decodeJournalLine(line []byte, v any) error {
	sum, data, ok := bytes.Cut(line, []byte(" "))
	if !ok || len(sum) != 8 {
		return errors.New("no checksum")
	}
	want, err := strconv.ParseUint(string(sum), 16, 32)
	if err != nil {
		return errors.New("no checksum")
	}
	if crc32.Checksum(data, castagnoli) != uint32(want) {
		return errors.New("checksum mismatch")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// loadResult is a configuration read from disk, and what its journal
// looked like.
type loadResult struct {
	state
	generation uint64
	records    int  // changes replayed from the journal
	torn       bool // the journal ended in a change a crash cut short
	current    bool // the journal exists and follows this snapshot
	// upgraded says that Rules.Upgrade filled in what an earlier version
	// did not save, which only a snapshot keeps.
	upgraded bool
}

// load reads the snapshot at path and replays its journal, holding what
// they hold to rules, and upgrades the result. Rules restored count as
// idle from now. It changes nothing on disk.
func load(path string, now time.Time, rules Rules) (*loadResult, error) {
	r, err := replay(path, now, rules)
	if err != nil {
		return nil, err
	}
	r.upgraded = rules.Upgrade != nil && rules.Upgrade(r.cfg)
	return r, nil
}

// replay reads the snapshot at path and replays its journal.
func replay(path string, now time.Time, rules Rules) (*loadResult, error) {
	snap, err := readSnapshot(path, rules)
	if err != nil {
		return nil, err
	}
	r := &loadResult{generation: snap.Generation}
	r.cfg = snap.Clone()
	r.cfg.Generation = 0
	r.tables = map[string]*flow.Table{}
	for i := range r.cfg.Bridges {
		bc := &r.cfg.Bridges[i]
		t, err := loadFlows(bc, now)
		if err != nil {
			return nil, corrupt(path, err)
		}
		r.tables[bc.Name] = t
		bc.Flows, bc.Installed, bc.Groups = nil, nil, nil
	}
	data, err := os.ReadFile(JournalPath(path))
	if errors.Is(err, fs.ErrNotExist) {
		return r, nil
	}
	if err != nil {
		return nil, err
	}
	lines := bytes.SplitAfter(data, []byte("\n"))
	if last := lines[len(lines)-1]; len(last) == 0 || last[len(last)-1] != '\n' {
		r.torn = len(last) > 0
		lines = lines[:len(lines)-1]
	}
	if len(lines) == 0 {
		return r, nil // cut short while being created
	}
	var header journalHeader
	if err := decodeJournalLine(bytes.TrimSuffix(lines[0], []byte("\n")), &header); err != nil {
		if len(lines) == 1 {
			r.torn = true
			return r, nil
		}
		return nil, corrupt(JournalPath(path), fmt.Errorf("line 1: %v", err))
	}
	if header.Generation != snap.Generation {
		// A compaction wrote the snapshot and was cut short before it
		// replaced this journal: the snapshot already holds its changes.
		return r, nil
	}
	r.current = true
	for i, line := range lines[1:] {
		var rec Record
		err := decodeJournalLine(bytes.TrimSuffix(line, []byte("\n")), &rec)
		if err != nil && i == len(lines)-2 {
			r.torn = true // a crash mid-append can leave a whole line of garbage too
			break
		}
		if err == nil {
			err = r.apply(rec, now, rules)
		}
		if err != nil {
			return nil, corrupt(JournalPath(path), fmt.Errorf("line %d: %v", i+2, err))
		}
		r.records++
	}
	return r, nil
}

// apply replays one change.
func (st *state) apply(rec Record, now time.Time, rules Rules) error {
	if rec.Config != nil {
		if err := rules.check(rec.Config); err != nil {
			return err
		}
		tables := make(map[string]*flow.Table, len(rec.Config.Bridges))
		for _, bc := range rec.Config.Bridges {
			if len(bc.Flows) > 0 || len(bc.Installed) > 0 || len(bc.Groups) > 0 {
				return fmt.Errorf("bridge %s: flows in a configuration change", bc.Name)
			}
			t, ok := st.tables[bc.Name]
			if !ok {
				t = flow.NewTable(nil, 1)
			}
			tables[bc.Name] = t
		}
		st.cfg, st.tables = rec.Config, tables
	}
	for _, e := range rec.Flows {
		bc := st.cfg.Bridge(e.Bridge)
		if bc == nil {
			return fmt.Errorf("flows of bridge %q, which does not exist", e.Bridge)
		}
		edit, err := e.parse(bc, rec.Time)
		if err != nil {
			return fmt.Errorf("bridge %s: %w", e.Bridge, err)
		}
		t := st.tables[e.Bridge]
		if e.Reset {
			t = flow.NewTable(nil, t.Version()+1).WithGroups(t.Groups())
		}
		if t, err = t.Apply(edit, now); err != nil {
			return fmt.Errorf("bridge %s: %w", e.Bridge, err)
		}
		st.tables[e.Bridge] = t
	}
	return nil
}

// parse turns e's texts into a flow.Edit for bridge bc.
func (e TableEdit) parse(bc *BridgeConfig, installed time.Time) (flow.Edit, error) {
	var edit flow.Edit
	var err error
	if edit.Remove, err = bc.ParseRules(e.Remove); err != nil {
		return edit, err
	}
	if edit.Modify, err = bc.ParseRules(e.Modify); err != nil {
		return edit, err
	}
	added, err := bc.ParseRules(e.Add)
	if err != nil {
		return edit, err
	}
	for _, r := range added {
		edit.Restore = append(edit.Restore, flow.SavedRule{Rule: r, Installed: installed})
	}
	edit.RemoveGroups, edit.GroupsInstalled = e.RemoveGroups, installed
	edit.Groups, err = bc.ParseGroups(e.Groups)
	return edit, err
}

// Load reads the configuration at path as a restart would find it, the
// journal's changes included, held to rules and upgraded, with every
// bridge's rules in Flows. It changes nothing on disk. A missing
// configuration is an empty one; one that cannot be read is an error
// naming the file, which is left alone.
func Load(path string, rules Rules) (*Config, error) {
	r, err := load(path, time.Now(), rules)
	if err != nil {
		return nil, err
	}
	return Snapshot(r.cfg, r.tables), nil
}

// Snapshot is a configuration of bridges and ports and the bridges' flow
// tables as a snapshot holds them: every bridge with its rules in Flows,
// but for the ephemeral ones.
func Snapshot(cfg *Config, tables map[string]*flow.Table) *Config {
	c := cfg.Clone()
	for i := range c.Bridges {
		bc := &c.Bridges[i]
		bc.Flows, bc.Installed = formatFlows(tables[bc.Name])
		bc.Groups = formatGroups(tables[bc.Name])
	}
	return c
}

// Store is the configuration on disk, open for a daemon's changes. Its
// methods are not safe for concurrent use: the daemon makes one change at
// a time.
type Store struct {
	path        string
	lock        *os.File
	journal     *os.File
	journalSize int64
	changes     int // appended since the last snapshot
	generation  uint64
	// broken is set when a failed append could not be undone: the journal
	// ends in a torn line, after which no change may be written.
	broken error
}

// Loaded is a configuration as a restart finds it: the bridges and ports
// (without Flows), each bridge's flow table, and what its journal held.
type Loaded struct {
	Config  *Config
	Tables  map[string]*flow.Table
	Records int  // changes replayed from the journal
	Torn    bool // the journal ended in a change a crash cut short, which is dropped
}

// Open locks the configuration at path, loads it held to rules, and
// compacts what its journal held into a new snapshot. Rules restored
// count as idle from now.
func Open(path string, now time.Time, rules Rules) (_ *Store, _ *Loaded, err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, nil, err
	}
	lock, err := lockConfig(path)
	if err != nil {
		return nil, nil, err
	}
	s := &Store{path: path, lock: lock}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	if err := removeStaleTemporaries(path); err != nil {
		return nil, nil, fmt.Errorf("removing the temporary files of interrupted saves: %w", err)
	}
	r, err := load(path, now, rules)
	if err != nil {
		return nil, nil, err
	}
	s.generation = r.generation
	if r.records > 0 || r.torn || r.upgraded {
		err = s.Compact(r.cfg, r.tables)
	} else if !r.current {
		err = s.newJournal(s.generation)
	} else {
		err = s.openJournal()
	}
	if err != nil {
		return nil, nil, fmt.Errorf("configuration %s: %w", path, err)
	}
	return s, &Loaded{Config: r.cfg, Tables: r.tables, Records: r.records, Torn: r.torn}, nil
}

// lockConfig takes the configuration's lock, or says who holds it.
func lockConfig(path string) (*os.File, error) {
	f, err := os.OpenFile(lockPath(path), os.O_RDWR|os.O_CREATE|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		holder, _ := os.ReadFile(lockPath(path))
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			pid := strings.TrimSpace(string(holder))
			return nil, fmt.Errorf("configuration %s is in use by another xswitch daemon (pid %s): stop it, or give this one another --db", path, pid)
		}
		return nil, fmt.Errorf("locking configuration %s: %w", path, err)
	}
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return f, nil
}

// Append writes rec to the journal and syncs it. A failed append is
// undone, so that the journal never holds a torn change between good ones.
func (s *Store) Append(rec Record) error {
	if s.broken != nil {
		return s.broken
	}
	line, err := journalLine(rec)
	if err != nil {
		return err
	}
	if _, err = s.journal.Write(line); err == nil {
		err = s.journal.Sync()
	}
	if err != nil {
		if terr := s.journal.Truncate(s.journalSize); terr != nil {
			s.broken = fmt.Errorf("the journal %s could not be repaired after a failed write (%v): restart the daemon", s.journal.Name(), terr)
		} else {
			s.journal.Seek(s.journalSize, 0)
		}
		return err
	}
	s.journalSize += int64(len(line))
	s.changes++
	return nil
}

// Changes counts the changes appended since the last snapshot.
func (s *Store) Changes() int { return s.changes }

// Generation numbers the snapshot in use.
func (s *Store) Generation() uint64 { return s.generation }

// DueForCompaction reports whether the journal has outgrown the snapshot.
func (s *Store) DueForCompaction() bool {
	if s.journalSize < MinCompaction {
		return false
	}
	st, err := os.Stat(s.path)
	return err != nil || s.journalSize > st.Size()
}

// Compact writes cfg and tables as the next snapshot and starts an empty
// journal for it. A crash at any point leaves the old snapshot and its
// journal, or the new snapshot (with or without the old journal, which
// then no longer counts).
func (s *Store) Compact(cfg *Config, tables map[string]*flow.Table) error {
	snap := Snapshot(cfg, tables)
	snap.Generation = s.generation + 1
	if err := Save(s.path, snap); err != nil {
		return fmt.Errorf("writing a snapshot: %w", err)
	}
	s.generation = snap.Generation
	return s.newJournal(s.generation)
}

// newJournal replaces the journal with an empty one for generation.
func (s *Store) newJournal(generation uint64) error {
	header, err := journalLine(journalHeader{Generation: generation})
	if err != nil {
		return err
	}
	if err := writeFileAtomic(JournalPath(s.path), header); err != nil {
		return fmt.Errorf("starting a journal: %w", err)
	}
	return s.openJournal()
}

// openJournal opens the journal for appending.
func (s *Store) openJournal() error {
	if s.journal != nil {
		s.journal.Close()
	}
	f, err := os.OpenFile(JournalPath(s.path), os.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	size, err := f.Seek(0, 2)
	if err != nil {
		f.Close()
		return err
	}
	s.journal, s.journalSize, s.changes, s.broken = f, size, 0, nil
	return nil
}

// Close releases the journal and the lock.
func (s *Store) Close() {
	if s.journal != nil {
		s.journal.Close()
	}
	s.lock.Close()
}
