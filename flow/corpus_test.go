package flow

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"text/tabwriter"
	"time"
)

// TestOVSCorpus is a differential test of the flow syntax against Open
// vSwitch's own parser. Every flow of testdata/ovs-corpus.txt is parsed by
// ParseRule and by `ovs-ofctl parse-flow`, and each flow falls in one of
// these classes:
//
//   - both reject it: fine;
//   - OVS accepts it and xswitch does not: "missing", a feature xswitch
//     lacks; allowed, and logged grouped by a label taken from xswitch's
//     error;
//   - xswitch accepts it and OVS does not: "lenient", a failure unless the
//     flow is in corpusLenient;
//   - both accept it: the two must mean the same. OVS is the oracle of
//     meaning: ovs-ofctl normalizes the original flow and xswitch's
//     FormatRule of it, and the two normal forms must be equal (so that
//     spelling, which xswitch canonicalizes its own way, does not matter),
//     unless the flow is in corpusKnownDifferent. And the text xswitch
//     prints must mean that in every protocol, not only in the one that
//     judged it: OpenFlow 1.0 and 1.1, which ovs-ofctl picks for many
//     flows, have no set_field, and carry some actions by others that
//     lose part of their meaning (a masked set_field of a header becomes
//     the header's whole-field action). So in each of corpusEveryProtocol
//     that carries Open vSwitch's own OpenFlow 1.3 reading of the flow,
//     which loses nothing (masked writes are loads there), xswitch's text
//     must read as that reading does.
//
// The flows are those of testdata/ovs-corpus.txt and corpusWrites, a
// write of every writable field in each form that writes it. Every flow
// xswitch accepts must also survive its own round trip:
// ParseRule(FormatRule(r)) == r.
//
// It needs ovs-ofctl (Open vSwitch's openvswitch-common, installed by
// test/deps) but no running switch: parse-flow only encodes the flow as
// an OpenFlow message and decodes it back. Without ovs-ofctl the test is
// skipped, or fails when XSWITCH_REQUIRE_PRIVILEGED=1 says that the tests
// that depend on the environment must run, as internal/testenv does.
//
// Run it with: go test ./flow -run TestOVSCorpus -v
func TestOVSCorpus(t *testing.T) {
	ofctl := corpusLookOfctl(t)
	flows := append(corpusRead(t, corpusFile), corpusWrites(t)...)

	// xswitch first, in order: ParseRule is cheap.
	ours := make([]corpusOurs, len(flows))
	for i, flow := range flows {
		ours[i] = corpusParseOurs(flow)
	}

	// Then OVS, one process per flow and in parallel: parse-flows would
	// stop at the first flow it rejects, and much of the corpus is there
	// to be rejected. A run takes a few milliseconds; the corpus, a few
	// seconds.
	ctx, cancel := context.WithTimeout(context.Background(), corpusTimeout)
	defer cancel()
	theirs := make([]corpusTheirs, len(flows))
	corpusParallel(len(flows), func(i int) {
		theirs[i] = ofctl.judge(ctx, flows[i], ours[i])
	})
	if err := ctx.Err(); err != nil {
		t.Fatalf("ovs-ofctl did not finish within %v: %v", corpusTimeout, err)
	}

	sum := corpusSummary{byProtocol: map[string]int{}}
	missing := map[string][]string{} // feature label: what to log
	for i, flow := range flows {
		our, their := ours[i], theirs[i]
		sum.total++
		if our.roundTrip != "" {
			t.Errorf("round trip: %q\n\t%s", flow, our.roundTrip)
		}
		if our.err == nil {
			sum.oursOK++
		}
		if their.ok {
			sum.theirsOK++
			sum.byProtocol[their.protocol]++
		}
		switch {
		case our.err != nil && !their.ok:
			sum.bothReject++
		case our.err != nil:
			label := corpusFeatureLabel(our.err)
			if their.dropped {
				// Not a feature: OVS takes the flow only by leaving out
				// a field whose prerequisites the match lacks.
				label = "stricter: ovs-ofctl drops fields that lack their prerequisites"
			}
			missing[label] = append(missing[label], fmt.Sprintf("%s\n\t\tovs-ofctl: %s", flow, their.norm))
			sum.missing++
		case !their.ok:
			if why, ok := corpusLenient[flow]; ok {
				sum.allowedLenient++
				t.Logf("lenient, allowed (%s): %q", why, flow)
				continue
			}
			sum.lenient++
			t.Errorf("lenient: xswitch accepts what ovs-ofctl rejects:\n\tflow:      %s\n\tovs-ofctl: %s\n\txswitch:   %s",
				flow, their.err, our.text)
		case (their.ourNorm == their.norm || their.ourNorm == their.ovsNorm) && len(their.otherwise) == 0:
			sum.same++
		case their.ourNorm == their.norm || their.ourNorm == their.ovsNorm:
			if why, ok := corpusKnownDifferent[flow]; ok {
				sum.allowedDifferent++
				t.Logf("different meaning, known (%s): %q", why, flow)
				continue
			}
			sum.different++
			t.Errorf("different meaning in another protocol:\n\tflow:            %s\n\txswitch formats: %s\n\t%s",
				flow, our.text, strings.Join(their.otherwise, "\n\t"))
		default:
			if why, ok := corpusKnownDifferent[flow]; ok {
				sum.allowedDifferent++
				t.Logf("different meaning, known (%s): %q", why, flow)
				continue
			}
			sum.different++
			ourNorm := their.ourNorm
			if their.ourErr != "" {
				ourNorm = "rejected: " + their.ourErr
			}
			t.Errorf("different meaning (ovs-ofctl %s):\n\tflow:               %s\n\txswitch formats:    %s\n\tovs-ofctl reads it: %s\n\tovs-ofctl reads xswitch's: %s",
				their.protocol, flow, our.text, their.norm, ourNorm)
		}
	}
	for _, flow := range corpusSortedKeys(corpusLenient) {
		if !slices.Contains(flows, flow) {
			t.Errorf("corpusLenient names a flow that is not in %s: %q", corpusFile, flow)
		}
	}
	for _, flow := range corpusSortedKeys(corpusKnownDifferent) {
		if !slices.Contains(flows, flow) {
			t.Errorf("corpusKnownDifferent names a flow that is not in %s: %q", corpusFile, flow)
		}
	}

	// What xswitch lacks, most common first.
	labels := corpusSortedKeys(missing)
	sort.SliceStable(labels, func(i, j int) bool { return len(missing[labels[i]]) > len(missing[labels[j]]) })
	for _, label := range labels {
		t.Logf("missing (%d): %s\n\t%s", len(missing[label]), label, strings.Join(missing[label], "\n\t"))
	}
	t.Log(sum.table(labels, missing))
}

const (
	corpusFile = "testdata/ovs-corpus.txt"
	// corpusTimeout bounds all of ovs-ofctl's runs together: they take a
	// few seconds, and a hung one must not hang the test. Under the race
	// detector on a loaded machine they took more than a minute.
	corpusTimeout = 3 * time.Minute
)

// corpusLenient lists the flows that xswitch accepts although ovs-ofctl
// rejects them, on purpose, each with why. A flow xswitch accepts by
// mistake belongs in a fix, not here.
var corpusLenient = map[string]string{
	"actions=strip_vlan,push_vlan:0x8100,output:1": "OVS refuses strip_vlan without a VLAN match in OpenFlow 1.1+ and has no push_vlan in 1.0, " +
		"so no protocol carries the pair; xswitch takes both, each doing nothing to a frame they do not fit, as in OVS's own datapath",
	"mpls,actions=copy_ttl_in,output:1":  corpusCopyTTL,
	"mpls,actions=copy_ttl_out,output:1": corpusCopyTTL,
	// corpusWrites'
	"dl_vlan=5,actions=load:0x1005->vlan_vid[],output:1":      corpusVLANVID,
	"dl_vlan=5,actions=move:vlan_vid[]->reg0[0..12],output:1": corpusVLANVID,
	"dl_vlan=5,actions=move:reg0[0..12]->vlan_vid[],output:1": corpusVLANVID,
	"arp,actions=move:arp_op[]->reg0[0..7],output:1":          corpusARPOp,
	"arp,actions=move:reg0[0..7]->arp_op[],output:1":          corpusARPOp,
	"ip,actions=move:NXM_NX_CT_STATE[]->NXM_NX_REG0[0..7]": "xswitch's ct_state has the 8 bits of its flags, in move too, " +
		"where OVS's field is 32 bits wide (NXM_NX_CT_STATE's width), the 24 above the flags always 0",
}

const corpusCopyTTL = "OpenFlow 1.3's copy_ttl_in and copy_ttl_out, which OVS lacks (its switch answers OFPBAC_BAD_TYPE) " +
	"and conformance suites test"

const corpusARPOp = "xswitch's arp_op has the 8 bits that the key keeps of the opcode, in load and move too, " +
	"where OVS's field is 16 bits wide and keeps 8 of them"

const corpusVLANVID = "xswitch's vlan_vid has OpenFlow's 13 bits, the present bit among them, in load and move too, where OVS's has the VID's 12; " +
	"xswitch prints them as the bits of vlan_tci, which OVS reads the same"

// corpusKnownDifferent lists the flows that xswitch and ovs-ofctl both
// accept but read differently, on purpose, each with why.
var corpusKnownDifferent = map[string]string{
	"ip,actions=set_field:64->nw_ttl,output:1": corpusSetNwTTL,
	"ip,actions=set_field:5->nw_ttl,output:1":  corpusSetNwTTL, // corpusWrites'
	"sctp,actions=mod_tp_dst:1234,output:1": "the same change: ovs-ofctl reads mod_tp_dst of an SCTP port as set_field to sctp_dst, " +
		"which OpenFlow 1.0 and 1.1 carry as a load of OXM_OF_SCTP_DST; xswitch prints it as written, mod_tp_dst, which they carry as such",
}

const corpusSetNwTTL = "the same change: OpenFlow 1.1+ has both an OFPAT_SET_NW_TTL action and set_field to nw_ttl, " +
	"which ovs-ofctl keeps apart; xswitch has one action, which it prints as mod_nw_ttl"

// corpusNoPorts resolves no port name, so that only numbers and reserved
// words name ports, as they do for ovs-ofctl parse-flow, which knows no
// bridge.
type corpusNoPorts struct{}

func (corpusNoPorts) PortNumber(string) (uint16, bool) { return 0, false }

// corpusLookOfctl finds ovs-ofctl or skips the test (fails it, when
// XSWITCH_REQUIRE_PRIVILEGED=1).
func corpusLookOfctl(t *testing.T) corpusOfctl {
	t.Helper()
	path, err := exec.LookPath("ovs-ofctl")
	if err != nil {
		if os.Getenv("XSWITCH_REQUIRE_PRIVILEGED") == "1" {
			t.Fatal("ovs-ofctl is not installed (test/deps installs openvswitch-switch) and XSWITCH_REQUIRE_PRIVILEGED=1 forbids skipping this test")
		}
		t.Skip("skipping: ovs-ofctl is not installed (test/deps installs it, with openvswitch-switch); set XSWITCH_REQUIRE_PRIVILEGED=1 to make this a failure")
	}
	if out, err := exec.Command(path, "--version").Output(); err == nil {
		version, _, _ := strings.Cut(string(out), "\n")
		t.Logf("oracle: %s (%s)", version, path)
	}
	return corpusOfctl{path: path}
}

// corpusRead reads the flows of file: one a line, without the blank lines
// and the comments (#). Flows must be distinct.
func corpusRead(t *testing.T, file string) []string {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var flows []string
	seen := map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimRight(sc.Text(), "\r")
		if trimmed := strings.TrimSpace(line); trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		if first, dup := seen[line]; dup {
			t.Errorf("%s:%d: the flow of line %d again: %q", file, n, first, line)
			continue
		}
		seen[line] = n
		flows = append(flows, line)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(flows) == 0 {
		t.Fatalf("%s holds no flows", file)
	}
	return flows
}

// corpusWrites are flows that write every writable field in every form
// of the flow syntax that writes it: set_field of the whole field, of a
// run of its bits and of two runs (a mask that ovs-ofctl prints as two
// loads), load of the whole field and of part of it, and move from and
// into a register, each with a match that gives what the field needs.
func corpusWrites(t *testing.T) []string {
	t.Helper()
	var contexts []Match
	texts := []string{"", "ip", "ipv6", "tcp", "udp", "sctp", "arp", "icmp", "icmp6", "icmp6,icmp_type=135", "icmp6,icmp_type=136", "dl_vlan=5", "mpls"}
	for _, text := range texts {
		r, err := ParseRule(text+",actions=drop", nil)
		if err != nil {
			t.Fatal(err)
		}
		contexts = append(contexts, r.Match)
	}
	var flows []string
	for _, f := range Fields() {
		if !f.Writable || len(f.OXM) == 0 || corpusMoreRegisters.MatchString(f.Name) {
			// A view of another field's bits, which actions name by that
			// field (subfield.inOVSTerms); or a register written as reg0 is.
			continue
		}
		match := -1
		for i := range contexts {
			if needs := f.actionNeeds(); needs == nil || needs.Holds(&contexts[i]) {
				match = i
				break
			}
		}
		if match < 0 {
			t.Fatalf("no match of %q gives what %s needs, %s", texts, f.Name, f.actionNeeds())
		}
		context := texts[match]
		write := func(actions string) string { return actions }
		if f.CTOnly {
			// A connection's field, which ct() writes as it commits.
			context = "ip"
			write = func(actions string) string { return "ct(commit,exec(" + actions + "))" }
		}
		add := func(actions string) {
			flows = append(flows, strings.TrimPrefix(context+",actions="+actions+",output:1", ","))
		}
		v := Value{Lo: 0x1005}.And(f.full())
		add(write(fmt.Sprintf("set_field:%s->%s", f.formatValue(v, f.full()), f.Name)))
		add(write(fmt.Sprintf("load:%#x->%s[]", v.Lo, f.Name)))
		if f.Bits > 2 {
			add(write(fmt.Sprintf("load:%#x->%s[1..2]", v.Shr(1).Lo&3, f.Name)))
			for _, mask := range []Value{{Lo: 6}, {Lo: 0x9}} {
				if mask.BitLen() <= int(f.Bits) {
					add(write(fmt.Sprintf("set_field:%s->%s", f.formatValue(v.And(mask), mask), f.Name)))
				}
			}
		}
		if f.Bits <= 32 {
			reg := fmt.Sprintf("reg0[0..%d]", f.Bits-1)
			add(fmt.Sprintf("move:%s[]->%s", f.Name, reg))
			add(write(fmt.Sprintf("move:%s->%s[]", reg, f.Name)))
		}
	}
	return flows
}

// corpusOurs is what xswitch makes of a flow.
type corpusOurs struct {
	err       error
	text      string // FormatRule of the rule, when err is nil
	roundTrip string // what went wrong reading text back, if anything
}

// corpusParseOurs parses flow with ParseRule and checks the round trip. A
// panic is a failure of the round trip, so that it names the flow.
func corpusParseOurs(flow string) (our corpusOurs) {
	defer func() {
		if p := recover(); p != nil {
			our = corpusOurs{err: fmt.Errorf("panic: %v", p), roundTrip: fmt.Sprintf("ParseRule panics: %v", p)}
		}
	}()
	r, err := ParseRule(flow, corpusNoPorts{})
	if err != nil {
		return corpusOurs{err: err}
	}
	our.text = FormatRule(r)
	switch back, err := ParseRule(our.text, corpusNoPorts{}); {
	case err != nil:
		our.roundTrip = fmt.Sprintf("FormatRule gives %q, which ParseRule rejects: %v", our.text, err)
	case !reflect.DeepEqual(back, r):
		our.roundTrip = fmt.Sprintf("FormatRule gives %q, which ParseRule reads as\n\t%+v, not\n\t%+v", our.text, back, r)
	}
	return our
}

// corpusOfctl runs ovs-ofctl.
type corpusOfctl struct{ path string }

// corpusProtocol is a way of running parse-flow.
type corpusProtocol struct {
	name string
	args []string
}

// corpusProtocols are the protocols parse-flow is asked to encode a flow in,
// in order: the first that can carry the flow gives its normal form.
//
// OpenFlow 1.5 comes first because its encoding loses the least: in
// OpenFlow 1.0 and NXM, ovs-ofctl turns a masked set_field into a mod_*
// action without the mask and drops clear_actions, so two flows that
// differ only there would print the same. Some flows only OpenFlow 1.0 can
// carry (mod_nw_src without "ip", strip_vlan before mod_vlan_vid, which
// 1.1 and later require consistent with the match); for those NXM, then
// whatever ovs-ofctl picks itself ("usable protocols: any"). A flow that
// none of them carries is one OVS rejects.
var corpusProtocols = []corpusProtocol{
	{"OpenFlow15", []string{"-O", "OpenFlow15"}},
	{"NXM", []string{"-F", "nxm"}},
	{"default", nil},
}

// corpusTheirs is what ovs-ofctl makes of a flow and of xswitch's
// formatting of it.
type corpusTheirs struct {
	ok       bool
	protocol string // the corpusProtocols entry that carried the flow
	norm     string // ovs-ofctl's normal form of the flow
	err      string // why it rejects the flow, when !ok
	// dropped says that ovs-ofctl took the flow only by "normalizing" its
	// match: leaving out fields whose prerequisites it lacks (tp_dst
	// without tcp or udp), which xswitch rejects instead.
	dropped bool
	// ourNorm is ovs-ofctl's normal form, in the same protocol, of
	// xswitch's FormatRule of the flow, when both accept it; ourErr is why
	// ovs-ofctl rejects that.
	ourNorm, ourErr string
	// ovsNorm is ovs-ofctl's normal form, in the same protocol, of Open
	// vSwitch's own OpenFlow 1.3 form of the flow (see readsOtherwise),
	// which xswitch may print instead of the flow's words: a set_field of
	// two runs of bits is two loads there.
	ovsNorm string
	// otherwise says how ovs-ofctl reads xswitch's FormatRule of the flow
	// in each of corpusEveryProtocol where that is not how it reads its
	// own OpenFlow 1.3 form of the flow.
	otherwise []string
}

// corpusEveryProtocol are the protocols in which xswitch's text must mean
// what the flow does. OpenFlow 1.5, which loses the least, is the first
// of corpusProtocols.
var corpusEveryProtocol = []corpusProtocol{
	{"OpenFlow10", []string{"-O", "OpenFlow10"}},
	{"OpenFlow11", []string{"-O", "OpenFlow11"}},
	{"OpenFlow13", []string{"-O", "OpenFlow13"}},
}

// judge has ovs-ofctl read flow, in the first protocol that carries it,
// and, if xswitch accepts the flow too, xswitch's formatting of it, in the
// same protocol so that the two normal forms compare.
func (o corpusOfctl) judge(ctx context.Context, flow string, our corpusOurs) corpusTheirs {
	var their corpusTheirs
	for _, p := range corpusProtocols {
		norm, dropped, err := o.parseFlow(ctx, p, flow)
		if err != nil {
			their.err = err.Error() // the last protocol's: ovs-ofctl's own choice
			continue
		}
		their = corpusTheirs{ok: true, protocol: p.name, norm: norm, dropped: dropped}
		break
	}
	if !their.ok {
		their.norm = "rejects: " + their.err
		return their
	}
	if our.err == nil {
		norm, _, err := o.parseFlow(ctx, corpusProtocolNamed(their.protocol), our.text)
		if err != nil {
			their.ourErr = err.Error()
		}
		their.ourNorm = norm
		if ovs, ok := o.ovsForm(ctx, flow, our.text); ok {
			if norm != their.norm {
				their.ovsNorm, _, _ = o.parseFlow(ctx, corpusProtocolNamed(their.protocol), ovs)
			}
			their.otherwise = o.readsOtherwise(ctx, ovs, our.text)
		}
	}
	return their
}

// ovsForm is Open vSwitch's own OpenFlow 1.3 form of flow, which loses
// nothing of it (a set_field of part of a field is loads there): the
// actions of ovs-ofctl's reading of flow in OpenFlow 1.3, after ours,
// xswitch's text of flow, up to its actions, so that the two differ in
// their actions alone. ok is false when OpenFlow 1.3 does not carry flow.
func (o corpusOfctl) ovsForm(ctx context.Context, flow, ours string) (string, bool) {
	theirs, _, err := o.parseFlow(ctx, corpusProtocolNamed("OpenFlow13"), flow)
	if err != nil {
		return "", false
	}
	return ours[:strings.Index(ours, "actions=")] + theirs[strings.Index(theirs, "actions="):], true
}

// readsOtherwise compares how ovs-ofctl reads ours, xswitch's text of a
// flow, in each of corpusEveryProtocol, with how it reads ovs, Open
// vSwitch's own OpenFlow 1.3 form of the flow (ovsForm), and returns what
// differs. A protocol that cannot carry ovs is skipped: it carries the
// flow in other words (mod_vlan_vid in OpenFlow 1.0), which the judging
// protocol checked.
func (o corpusOfctl) readsOtherwise(ctx context.Context, ovs, ours string) []string {
	var otherwise []string
	for _, p := range corpusEveryProtocol {
		want, _, err := o.parseFlow(ctx, p, ovs)
		if err != nil {
			continue
		}
		switch got, _, err := o.parseFlow(ctx, p, ours); {
		case err != nil:
			otherwise = append(otherwise, fmt.Sprintf("ovs-ofctl %s rejects xswitch's text (%v) and reads OVS's own %s as %s", p.name, err, ovs, want))
		case got != want:
			otherwise = append(otherwise, fmt.Sprintf("ovs-ofctl %s reads xswitch's text as %s\n\t    and OVS's own %s as %s", p.name, got, ovs, want))
		}
	}
	return otherwise
}

func corpusProtocolNamed(name string) corpusProtocol {
	for _, p := range append(corpusProtocols, corpusEveryProtocol...) {
		if p.name == name {
			return p
		}
	}
	panic("no protocol " + name)
}

// parseFlow runs `ovs-ofctl parse-flow` on flow and returns the flow as
// ovs-ofctl prints the message it encoded: what follows "ADD " in
//
//	OFPT_FLOW_MOD (OF1.5) (xid=0x1): ADD table:1 priority=5,ip cookie:0x7 actions=output:1
//
// dropped reports that ovs-ofctl said it changed the match to make it
// valid ("normalization changed ofp_match").
func (o corpusOfctl) parseFlow(ctx context.Context, p corpusProtocol, flow string) (norm string, dropped bool, err error) {
	args := append(append([]string(nil), p.args...), "parse-flow", flow)
	cmd := exec.CommandContext(ctx, o.path, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return "", false, ctx.Err()
		}
		return "", false, errors.New(corpusOfctlError(stderr.String(), err))
	}
	dropped = strings.Contains(stderr.String(), "normalization changed")
	for line := range strings.Lines(stdout.String()) {
		if _, norm, ok := strings.Cut(line, "): ADD "); ok && strings.Contains(line, "FLOW_MOD") {
			return strings.TrimSpace(norm), dropped, nil
		}
		if strings.Contains(line, "decode error") {
			// It encoded a message it cannot decode: an action order that
			// this protocol cannot carry.
			return "", false, fmt.Errorf("%s: %s", p.name, strings.TrimSpace(line))
		}
	}
	return "", false, fmt.Errorf("no flow_mod in ovs-ofctl's output:\n%s%s", stdout.String(), stderr.String())
}

// corpusOfctlError is the message of a failed run: its last line of error
// output, without the program's name and the log lines' prefixes.
func corpusOfctlError(stderr string, err error) string {
	var last string
	for line := range strings.Lines(stderr) {
		if line = strings.TrimSpace(line); line != "" && !strings.Contains(line, "|WARN|") {
			last = line
		}
	}
	if last == "" {
		return err.Error()
	}
	return strings.TrimPrefix(last, "ovs-ofctl: ")
}

// corpusParallel runs f(0) to f(n-1) on a few goroutines.
func corpusParallel(n int, f func(i int)) {
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range max(4, 2*runtime.NumCPU()) {
		wg.Go(func() {
			for i := range jobs {
				f(i)
			}
		})
	}
	for i := range n {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
}

var (
	corpusUnknownField  = regexp.MustCompile(`^unknown field "([^"]*)"`)
	corpusUnknownAction = regexp.MustCompile(`^unknown action "([^"(:]*)`)
	corpusParenAction   = regexp.MustCompile(`^action "([^"(:]*)\(.*arguments in parentheses`)
	corpusQuoted        = regexp.MustCompile(`"[^"]*"`)
	corpusName          = regexp.MustCompile(`^"[A-Za-z_][A-Za-z0-9_]*"$`)
	corpusExplanation   = regexp.MustCompile(` \([^()]*\)|;.*`)
	corpusUnknown       = regexp.MustCompile(`unknown|unsupported|not supported|no port`)
	corpusNumber        = regexp.MustCompile(`\b(0x[0-9a-fA-F]+|[0-9]+)\b`)
	corpusMoreRegisters = regexp.MustCompile(`^x?reg[1-9]`)
)

// corpusFeatureLabel names the feature a flow that xswitch rejects needs, from
// xswitch's error, so that the missing flows group by what to implement:
// "field tun_id", "action learn", or the error with its values taken out.
func corpusFeatureLabel(err error) string {
	msg := err.Error()
	if m := corpusUnknownField.FindStringSubmatch(msg); m != nil {
		return "field " + m[1]
	}
	if m := corpusParenAction.FindStringSubmatch(msg); m != nil {
		return "action " + m[1] + "(...)"
	}
	if m := corpusUnknownAction.FindStringSubmatch(msg); m != nil {
		return "action " + m[1]
	}
	// The name of what xswitch does not know says what is missing; other
	// quoted text is the flow's own, as are the numbers.
	unknown := corpusUnknown.MatchString(msg)
	msg = corpusQuoted.ReplaceAllStringFunc(msg, func(q string) string {
		if unknown && corpusName.MatchString(q) {
			return q
		}
		return `"…"`
	})
	msg = corpusNumber.ReplaceAllString(msg, "N")
	// The explanations and the advice, not the feature.
	msg = corpusExplanation.ReplaceAllString(msg, "")
	if len(msg) > 90 {
		msg = msg[:90] + "…"
	}
	return msg
}

// corpusSummary counts the flows of each class.
type corpusSummary struct {
	total, oursOK, theirsOK          int
	bothReject, missing, same        int
	lenient, different               int // failures
	allowedLenient, allowedDifferent int
	byProtocol                       map[string]int // the flows ovs-ofctl accepts, by the protocol that carried them
}

func (s corpusSummary) table(labels []string, missing map[string][]string) string {
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	row := func(n int, what string) { fmt.Fprintf(w, "%d\t  %s\n", n, what) }
	b.WriteString("summary of " + corpusFile + ":\n")
	row(s.total, "flows")
	row(s.theirsOK, "accepted by ovs-ofctl")
	for _, p := range corpusProtocols {
		row(s.byProtocol[p.name], "    normalized in "+p.name)
	}
	row(s.oursOK, "accepted by xswitch")
	row(s.same, "accepted by both, same meaning")
	row(s.different, "accepted by both, different meaning (failures)")
	row(s.allowedDifferent, "accepted by both, different meaning, known")
	row(s.bothReject, "rejected by both")
	row(s.lenient, "lenient: accepted by xswitch only (failures)")
	row(s.allowedLenient, "lenient, allowed")
	row(s.missing, "missing: accepted by ovs-ofctl only")
	for _, label := range labels {
		row(len(missing[label]), "    "+label)
	}
	w.Flush()
	return b.String()
}

func corpusSortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
