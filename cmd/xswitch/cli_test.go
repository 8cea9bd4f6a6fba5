package main

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/xswitch/xswitch/control/api"
)

// execute runs the CLI in-process with args and returns what it printed.
func execute(t *testing.T, args ...string) (string, error) {
	t.Helper()
	root := newRootCommand()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), err
}

func TestCompletionScripts(t *testing.T) {
	for _, shell := range []string{"bash", "zsh"} {
		out, err := execute(t, "completion", shell)
		if err != nil {
			t.Errorf("completion %s: %v", shell, err)
			continue
		}
		if !strings.Contains(out, "xswitch") || len(out) < 1000 {
			t.Errorf("completion %s: %d bytes that do not look like a script for xswitch:\n%.300s", shell, len(out), out)
		}
	}
}

func TestVersion(t *testing.T) {
	out, err := execute(t, "version")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out, "xswitch ") || !strings.Contains(out, "go1.") {
		t.Errorf("version printed %q, want \"xswitch VERSION, ... goX.Y\"", out)
	}

	out, err = execute(t, "version", "--format", "json")
	if err != nil {
		t.Fatal(err)
	}
	var v versionJSON
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("version --format json: %v\n%s", err, out)
	}
	if v.Version == "" || !strings.HasPrefix(v.Go, "go") || v.Platform == "" {
		t.Errorf("version --format json: %+v lacks version, Go or platform", v)
	}
}

func TestVersionUnknownFormat(t *testing.T) {
	_, err := execute(t, "version", "--format", "yaml")
	if err == nil || !strings.Contains(err.Error(), `unknown --format "yaml"`) {
		t.Errorf("version --format yaml: error %v, want unknown --format", err)
	}
}

func TestParseCPUList(t *testing.T) {
	for in, want := range map[string][]int{
		"1":       {1},
		"0,2-3":   {0, 2, 3},
		"3,1-2,2": {1, 2, 3},
	} {
		got, err := parseCPUList(in)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("parseCPUList(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "a", "1,", "3-1", "-1", "1-", "70000"} {
		if got, err := parseCPUList(in); err == nil {
			t.Errorf("parseCPUList(%q) = %v, want an error", in, got)
		}
	}
}

func TestPrintForwarder(t *testing.T) {
	for _, tc := range []struct {
		f    api.ForwarderStatus
		want string
	}{
		{api.ForwarderStatus{}, "  forwarding thread: any CPU, sleeping when idle\n"},
		{api.ForwarderStatus{CPUs: []int{2}, BusySec: 1, IdleSec: 1},
			"  forwarding thread: CPU 2, sleeping when idle\n  busy: 1.0 s (50.0%), idle: 1.0 s (50.0%)\n"},
		{api.ForwarderStatus{CPUs: []int{1, 3}, BusyPoll: true, BusySec: 1, IdleSec: 3},
			"  forwarding threads: one on each of CPUs 1,3, busy-polling when idle\n  busy: 1.0 s (25.0%), idle: 3.0 s (75.0%)\n"},
	} {
		var out strings.Builder
		printForwarder(&out, tc.f)
		if out.String() != tc.want {
			t.Errorf("printForwarder(%+v) = %q, want %q", tc.f, out.String(), tc.want)
		}
	}
}

// TestDaemonRefusesSizesOfNothing keeps a fix: --mac-table-size -5 was
// accepted silently (and meant the default).
func TestDaemonRefusesSizesOfNothing(t *testing.T) {
	for _, args := range [][]string{
		{"--mac-table-size", "-5"}, {"--mac-table-size", "0"}, {"--flow-cache-size", "-1"},
	} {
		dir := t.TempDir()
		_, err := execute(t, append([]string{"daemon", "--sock", dir + "/s", "--db", dir + "/db"}, args...)...)
		if want := args[0] + " " + args[1] + ": must be at least 1"; err == nil || err.Error() != want {
			t.Errorf("daemon %s: %v, want %q", strings.Join(args, " "), err, want)
		}
	}
}

func TestFormatDatumAsOVSDoes(t *testing.T) {
	for raw, want := range map[string]string{
		`true`:                    `true`,
		`"true"`:                  `"true"`,
		`"32768"`:                 `"32768"`,
		`"aa:bb:cc:dd:ee:ff"`:     `"aa:bb:cc:dd:ee:ff"`,
		`"br0"`:                   `br0`,
		`"a-b.c_d9"`:              `a-b.c_d9`,
		`""`:                      `""`,
		`{}`:                      `{}`,
		`{"z":"1","a":"x y"}`:     `{a="x y", z="1"}`,
		`{"forward-bpdu":"true"}`: `{forward-bpdu="true"}`,
		`20`:                      `20`,
		`[]`:                      `[]`,
		`[10,20]`:                 `[10, 20]`,
		`"native-untagged"`:       `native-untagged`,
	} {
		if got := formatDatum([]byte(raw)); got != want {
			t.Errorf("formatDatum(%s) = %s; want %s", raw, got, want)
		}
	}
}
