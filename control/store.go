package control

// The configuration on disk.
//
// The daemon keeps its configuration as OVSDB keeps a database: a snapshot
// of the whole (the --db file) and a journal of the changes made since
// (the same path with ".journal" added), one change a line, synced before
// the verb that made it returns. A change costs what it says, not what the
// configuration holds: one add-flow on a table of 200,000 rules appends one
// line, where rewriting the snapshot would write 12 MB. When the journal
// outgrows the snapshot (and at start-up, when it holds anything or a
// bridge was given the datapath id it lacked), the daemon writes a new
// snapshot and starts a new journal: compaction.
//
// Each journal line is a CRC-32C of its JSON, a space, and the JSON. A
// crash mid-append leaves a torn last line: that change was never
// acknowledged, and loading ignores it. A bad line with good ones after it
// is corruption, which the daemon refuses to start on, as it refuses a
// snapshot it cannot read. The journal's first line names the snapshot
// generation it follows, so that the journal a crash in the middle of a
// compaction leaves beside the new snapshot is recognised as already in it.
//
// The daemon also holds an exclusive flock on a lock file beside the
// configuration (".lock" added), holding its pid, for as long as it runs:
// two daemons on one configuration would overwrite each other's changes
// and delete each other's devices.

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

// minCompaction is the journal size below which the daemon never compacts,
// so that a small configuration is not rewritten every few changes.
var minCompaction int64 = 1 << 20

// journalRecord is one change: a new configuration of bridges and ports,
// edits to flow tables, or both, applied in that order.
type journalRecord struct {
	Time time.Time `json:"time"`
	// Config, when given, replaces everything but the flow tables: those
	// of bridges it keeps stay, those of bridges it drops go, and a new
	// bridge starts with an empty table (which Flows then fills).
	Config *Config     `json:"config,omitempty"`
	Flows  []tableEdit `json:"flows,omitempty"`
}

// tableEdit is a change to one bridge's flow table, its rules in
// ovs-ofctl syntax. Removed and modified rules are found by their match
// and priority; added ones are installed at the record's time.
type tableEdit struct {
	Bridge string   `json:"bridge"`
	Reset  bool     `json:"reset,omitempty"` // empty the table first
	Remove []string `json:"remove,omitempty"`
	Modify []string `json:"modify,omitempty"` // the rules with their new actions
	Add    []string `json:"add,omitempty"`
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

func journalPath(path string) string { return path + ".journal" }
func lockPath(path string) string    { return path + ".lock" }

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
	// newIDs says that bridges saved without a datapath id were given
	// one, which only a snapshot keeps.
	newIDs bool
}

// load reads the snapshot at path and replays its journal, and gives a
// bridge without a datapath id one. Rules restored count as idle from
// now. It changes nothing on disk.
func load(path string, now time.Time) (*loadResult, error) {
	r, err := replay(path, now)
	if err != nil {
		return nil, err
	}
	r.newIDs = r.cfg.assignDatapathIDs()
	return r, nil
}

// replay reads the snapshot at path and replays its journal.
func replay(path string, now time.Time) (*loadResult, error) {
	snap, err := readSnapshot(path)
	if err != nil {
		return nil, err
	}
	r := &loadResult{generation: snap.Generation}
	r.cfg = snap.clone()
	r.cfg.Generation = 0
	r.tables = map[string]*flow.Table{}
	for i := range r.cfg.Bridges {
		bc := &r.cfg.Bridges[i]
		t, err := loadFlows(bc, now)
		if err != nil {
			return nil, corrupt(path, err)
		}
		r.tables[bc.Name] = t
		bc.Flows, bc.Installed = nil, nil
	}
	data, err := os.ReadFile(journalPath(path))
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
		return nil, corrupt(journalPath(path), fmt.Errorf("line 1: %v", err))
	}
	if header.Generation != snap.Generation {
		// A compaction wrote the snapshot and was cut short before it
		// replaced this journal: the snapshot already holds its changes.
		return r, nil
	}
	r.current = true
	for i, line := range lines[1:] {
		var rec journalRecord
		err := decodeJournalLine(bytes.TrimSuffix(line, []byte("\n")), &rec)
		if err != nil && i == len(lines)-2 {
			r.torn = true // a crash mid-append can leave a whole line of garbage too
			break
		}
		if err == nil {
			err = r.apply(rec, now)
		}
		if err != nil {
			return nil, corrupt(journalPath(path), fmt.Errorf("line %d: %v", i+2, err))
		}
		r.records++
	}
	return r, nil
}

// apply replays one change.
func (st *state) apply(rec journalRecord, now time.Time) error {
	if rec.Config != nil {
		if err := rec.Config.validate(); err != nil {
			return err
		}
		tables := make(map[string]*flow.Table, len(rec.Config.Bridges))
		for _, bc := range rec.Config.Bridges {
			if len(bc.Flows) > 0 || len(bc.Installed) > 0 {
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
		bc := st.cfg.bridge(e.Bridge)
		if bc == nil {
			return fmt.Errorf("flows of bridge %q, which does not exist", e.Bridge)
		}
		edit, err := e.parse(bc, rec.Time)
		if err != nil {
			return fmt.Errorf("bridge %s: %w", e.Bridge, err)
		}
		t := st.tables[e.Bridge]
		if e.Reset {
			t = flow.NewTable(nil, t.Version()+1)
		}
		if t, err = t.Apply(edit, now); err != nil {
			return fmt.Errorf("bridge %s: %w", e.Bridge, err)
		}
		st.tables[e.Bridge] = t
	}
	return nil
}

// parse turns e's texts into a flow.Edit for bridge bc.
func (e tableEdit) parse(bc *BridgeConfig, installed time.Time) (flow.Edit, error) {
	var edit flow.Edit
	var err error
	if edit.Remove, err = parseRules(bc, e.Remove); err != nil {
		return edit, err
	}
	if edit.Modify, err = parseRules(bc, e.Modify); err != nil {
		return edit, err
	}
	added, err := parseRules(bc, e.Add)
	for _, r := range added {
		edit.Restore = append(edit.Restore, flow.SavedRule{Rule: r, Installed: installed})
	}
	return edit, err
}

// LoadConfig reads the configuration at path as a restart would find it,
// the journal's changes included, with every bridge's rules in Flows. It
// changes nothing on disk. A missing configuration is an empty one; one
// that cannot be read is an error naming the file, which is left alone.
func LoadConfig(path string) (*Config, error) {
	r, err := load(path, time.Now())
	if err != nil {
		return nil, err
	}
	return r.snapshot(), nil
}

// snapshot is st as a snapshot holds it: every bridge with its flows.
func (st *state) snapshot() *Config {
	c := st.cfg.clone()
	for i := range c.Bridges {
		bc := &c.Bridges[i]
		bc.Flows, bc.Installed = formatFlows(st.tables[bc.Name])
	}
	return c
}

// store is the configuration on disk, open for a daemon's changes.
type store struct {
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

// openStore locks the configuration at path, loads it, and compacts what
// its journal held into a new snapshot.
func openStore(path string, now time.Time) (_ *store, _ *loadResult, err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, nil, err
	}
	lock, err := lockConfig(path)
	if err != nil {
		return nil, nil, err
	}
	s := &store{path: path, lock: lock}
	defer func() {
		if err != nil {
			s.close()
		}
	}()
	if err := removeStaleTemporaries(path); err != nil {
		return nil, nil, fmt.Errorf("removing the temporary files of interrupted saves: %w", err)
	}
	r, err := load(path, now)
	if err != nil {
		return nil, nil, err
	}
	s.generation = r.generation
	if r.records > 0 || r.torn || r.newIDs {
		err = s.compact(&r.state)
	} else if !r.current {
		err = s.newJournal(s.generation)
	} else {
		err = s.openJournal()
	}
	if err != nil {
		return nil, nil, fmt.Errorf("configuration %s: %w", path, err)
	}
	return s, r, nil
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

// append writes rec to the journal and syncs it. A failed append is
// undone, so that the journal never holds a torn change between good ones.
func (s *store) append(rec journalRecord) error {
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

// dueForCompaction reports whether the journal has outgrown the snapshot.
// A daemon that stops compacts whatever the journal holds, so that the
// snapshot alone is the configuration until the next change.
func (s *store) dueForCompaction() bool {
	if s.journalSize < minCompaction {
		return false
	}
	st, err := os.Stat(s.path)
	return err != nil || s.journalSize > st.Size()
}

// compact writes st as the next snapshot and starts an empty journal for
// it. A crash at any point leaves the old snapshot and its journal, or the
// new snapshot (with or without the old journal, which then no longer
// counts).
func (s *store) compact(st *state) error {
	snap := st.snapshot()
	snap.Generation = s.generation + 1
	if err := SaveConfig(s.path, snap); err != nil {
		return fmt.Errorf("writing a snapshot: %w", err)
	}
	s.generation = snap.Generation
	return s.newJournal(s.generation)
}

// newJournal replaces the journal with an empty one for generation.
func (s *store) newJournal(generation uint64) error {
	header, err := journalLine(journalHeader{Generation: generation})
	if err != nil {
		return err
	}
	if err := writeFileAtomic(journalPath(s.path), header); err != nil {
		return fmt.Errorf("starting a journal: %w", err)
	}
	return s.openJournal()
}

// openJournal opens the journal for appending.
func (s *store) openJournal() error {
	if s.journal != nil {
		s.journal.Close()
	}
	f, err := os.OpenFile(journalPath(s.path), os.O_WRONLY|unix.O_CLOEXEC, 0)
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

// close releases the journal and the lock.
func (s *store) close() {
	if s.journal != nil {
		s.journal.Close()
	}
	s.lock.Close()
}
