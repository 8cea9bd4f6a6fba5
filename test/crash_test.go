package test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/xswitch/xswitch/control"
	"github.com/xswitch/xswitch/internal/testenv"
)

// bulkRules is how many rules one add-flows of the crash test carries.
const bulkRules = 10000

// manyRules is n distinct rules of priority prio, one a line, as an
// add-flows file holds them. The priority tells one batch from another.
func manyRules(n, prio int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "priority=%d,ip,nw_dst=10.%d.%d.%d,actions=drop\n", prio, 100+i>>16, i>>8&0xff, i&0xff)
	}
	return b.String()
}

// writeBulkRules writes bulkRules distinct rules of priority prio to a
// file and returns its path.
func writeBulkRules(t *testing.T, prio int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), fmt.Sprintf("rules-%d", prio))
	if err := os.WriteFile(path, []byte(manyRules(bulkRules, prio)), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// savedFlows loads the daemon's configuration file as a restart would and
// returns how many rules bridge br has in it, and how many of priority
// prio.
func savedFlows(t *testing.T, db, br string, prio int) (total, marked int) {
	t.Helper()
	cfg, err := control.LoadConfig(db)
	if err != nil {
		t.Fatalf("configuration after kill -9: %v", err)
	}
	marker := fmt.Sprintf("priority=%d,", prio)
	for _, b := range cfg.Bridges {
		if b.Name != br {
			continue
		}
		for _, f := range b.Flows {
			total++
			if strings.Contains(f, marker) {
				marked++
			}
		}
		return total, marked
	}
	t.Fatalf("configuration after kill -9 has no bridge %s", br)
	return 0, 0
}

// TestCrashDuringAddFlowsKeepsOldOrNewTable kills the daemon with SIGKILL
// at random moments of a 10,000-rule add-flows. After each kill the saved
// configuration must load, and after the restart the table must be the
// old one or the new one, never part of the new rules; an add-flows the
// client saw succeed must be there.
func TestCrashDuringAddFlowsKeepsOldOrNewTable(t *testing.T) {
	testenv.RequireRoot(t)
	d := startDaemon(t)
	br := newTestNet().name("br")
	d.x(t, "add-br", br)
	old, _ := flowCount(t, d, br, "")

	// An uninterrupted add-flows tells how long the kills have to land in.
	file := writeBulkRules(t, 100)
	begin := time.Now()
	d.x(t, "add-flows", br, file)
	full := time.Since(begin)
	if total, marked := flowCount(t, d, br, "priority=100,"); total != old+bulkRules || marked != bulkRules {
		t.Fatalf("after an uninterrupted add-flows: %d rules, %d of them new; want %d and %d", total, marked, old+bulkRules, bulkRules)
	}
	d.x(t, "del-flows", br, "ip")
	t.Logf("an uninterrupted add-flows of %d rules took %v", bulkRules, full.Round(time.Millisecond))

	// The kills home in on the moment the new table is committed: each
	// falls at a random point of [early, late], and narrows the window to
	// the side of it where the outcome changes. The first falls anywhere
	// from just after the client starts to well past a whole add-flows.
	const rounds = 10
	early, late := 5*time.Millisecond, 2*full
	var before, after, acknowledged int
	for round := 1; round <= rounds; round++ {
		prio := 100 + round
		file := writeBulkRules(t, prio)
		delay := early + rand.N(late-early+1)
		client := startBackground(t, xswitchBin, "--sock", d.sock, "add-flows", br, file)
		time.Sleep(delay)
		d.stop(t, syscall.SIGKILL)
		client.wait(t, commandTimeout)
		clientOK := client.cmd.ProcessState.ExitCode() == 0

		savedTotal, savedMarked := savedFlows(t, d.db, br, prio)
		d.start(t)
		total, marked := flowCount(t, d, br, fmt.Sprintf("priority=%d,", prio))
		t.Logf("round %d: kill after %v: client exit %d, saved %d rules (%d new), restored %d (%d new)",
			round, delay.Round(time.Millisecond), client.cmd.ProcessState.ExitCode(), savedTotal, savedMarked, total, marked)
		switch {
		case total != savedTotal || marked != savedMarked:
			t.Errorf("round %d: restart restored %d rules (%d new), the file holds %d (%d new)", round, total, marked, savedTotal, savedMarked)
		case total == old && marked == 0:
			before++
			early = delay
			if clientOK {
				t.Errorf("round %d: add-flows succeeded for the client, but its rules are gone after kill -9", round)
			}
		case total == old+bulkRules && marked == bulkRules:
			after++
			late = delay
			if clientOK {
				acknowledged++
			}
			d.x(t, "del-flows", br, "ip")
		default:
			t.Fatalf("round %d: after kill -9 %v into add-flows: %d rules, %d of them new; want %d (old) or %d (new)",
				round, delay.Round(time.Millisecond), total, marked, old, old+bulkRules)
		}
		if before > 0 && after == 0 && round >= rounds/2 {
			late *= 2 // a slow machine: let the later kills reach the commit
		}
	}
	t.Logf("%d kills: %d left the old table, %d the new one (%d of those acknowledged to the client); the commit fell between %v and %v",
		rounds, before, after, acknowledged, early.Round(time.Millisecond), late.Round(time.Millisecond))
	if before == 0 || after == 0 {
		t.Errorf("no kill fell on the %s side of the commit: the test did not probe it", map[bool]string{true: "old", false: "new"}[before == 0])
	}

	// Kills during a compaction leave its temporary file; the next start
	// must clear them.
	if leftovers, _ := filepath.Glob(filepath.Join(filepath.Dir(d.db), ".*.xswitch-save-*")); len(leftovers) != 0 {
		t.Errorf("temporary files of interrupted saves left beside the configuration: %v", leftovers)
	}
}

// TestCorruptConfigRefusedAndKept puts broken configurations where the
// daemon keeps its own and checks that it refuses to start, says the file
// is corrupt and where it is, and leaves it as it was for the operator.
func TestCorruptConfigRefusedAndKept(t *testing.T) {
	testenv.RequireRoot(t)
	d := startDaemon(t)
	br := newTestNet().name("br")
	d.x(t, "add-br", br)
	d.x(t, "add-flow", br, "priority=5,arp,actions=NORMAL")
	d.stop(t, syscall.SIGTERM)
	good, err := os.ReadFile(d.db)
	if err != nil {
		t.Fatal(err)
	}
	garbage := make([]byte, 4096)
	for i := range garbage {
		garbage[i] = byte(rand.IntN(256))
	}
	for _, c := range []struct {
		name    string
		content []byte
	}{
		{"random bytes", garbage},
		{"torn in the middle", good[:len(good)/2]},
		{"empty", nil},
		{"zeros", make([]byte, 512)},
		{"unknown field", []byte(`{"bridges": [], "bridgez": []}`)},
		{"second value", append(bytes.Clone(good), good...)},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := os.WriteFile(d.db, c.content, 0o600); err != nil {
				t.Fatal(err)
			}
			r := d.startFails(t)
			if !strings.Contains(r.stderr, "corrupt") || !strings.Contains(r.stderr, d.db) {
				t.Errorf("daemon on a %s configuration: exit %d, stderr %q; want it to say %s is corrupt", c.name, r.code, r.stderr, d.db)
			}
			if kept, err := os.ReadFile(d.db); err != nil || !bytes.Equal(kept, c.content) {
				t.Errorf("the daemon changed the %s configuration it refused (%d bytes, now %d, %v)", c.name, len(c.content), len(kept), err)
			}
			if _, err := os.Stat(d.sock); err == nil {
				t.Errorf("a daemon that refused to start left its socket %s", d.sock)
			}
		})
	}

	// Well-formed JSON that names an impossible rule: not corrupt, but not
	// loadable either; the message must still name the file.
	bad := bytes.Replace(good, []byte("priority=5,arp actions=NORMAL"), []byte("priority=5,arp actions=bogus"), 1)
	if bytes.Equal(bad, good) {
		t.Fatalf("the saved configuration lacks the rule added:\n%s", good)
	}
	if err := os.WriteFile(d.db, bad, 0o600); err != nil {
		t.Fatal(err)
	}
	if r := d.startFails(t); !strings.Contains(r.stderr, d.db) || !strings.Contains(r.stderr, "bogus") {
		t.Errorf("daemon on a configuration with a bad rule: stderr %q; want the file and the rule named", r.stderr)
	}
	if kept, _ := os.ReadFile(d.db); !bytes.Equal(kept, bad) {
		t.Error("the daemon changed the configuration with a bad rule it refused")
	}

	// Once the operator puts the good file back, the daemon starts with it.
	if err := os.WriteFile(d.db, good, 0o600); err != nil {
		t.Fatal(err)
	}
	d.start(t)
	if got := d.x(t, "dump-flows", br); !strings.Contains(got, "priority=5,arp actions=NORMAL") {
		t.Errorf("after restoring the configuration, dump-flows %s:\n%s", br, got)
	}
}
