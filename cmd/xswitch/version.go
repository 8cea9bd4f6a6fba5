package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// versionJSON is what `xswitch version` reports, taken from the build
// information the Go toolchain embeds in the binary.
type versionJSON struct {
	Version  string `json:"version"`            // the module version, "(devel)" for a build from a clone
	Revision string `json:"revision,omitempty"` // the VCS commit it was built from
	Time     string `json:"time,omitempty"`     // that commit's time
	Modified bool   `json:"modified"`           // the working tree had uncommitted changes
	Go       string `json:"go"`
	Platform string `json:"platform"`
}

func (c *cli) versionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print xswitch's version, the commit it was built from and the Go that built it",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			v := buildVersion()
			return c.emit(cmd.OutOrStdout(), v, func(w io.Writer) { printVersion(w, v) })
		},
	}
}

func buildVersion() versionJSON {
	v := versionJSON{Version: "(devel)", Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	if info.Main.Version != "" {
		v.Version = info.Main.Version
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value
		case "vcs.time":
			v.Time = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

// printVersion prints one line, e.g.
// "xswitch (devel), commit 7424de8c1a2b of 2026-01-02T10:00:00Z (modified), go1.26.8 linux/amd64".
func printVersion(w io.Writer, v versionJSON) {
	parts := []string{"xswitch " + v.Version}
	if v.Revision != "" {
		commit := "commit " + v.Revision[:min(12, len(v.Revision))]
		if v.Time != "" {
			commit += " of " + v.Time
		}
		if v.Modified {
			commit += " (modified)"
		}
		parts = append(parts, commit)
	}
	parts = append(parts, v.Go+" "+v.Platform)
	fmt.Fprintln(w, strings.Join(parts, ", "))
}
