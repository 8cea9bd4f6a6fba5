package vswitch

// VLANs, as NORMAL sees them. The semantics are Open vSwitch's (the "VLAN
// Configuration" section of ovs-vswitchd.conf.db(5)):
//
//   - trunk: a frame belongs to the VLAN of its 802.1Q tag, or to VLAN 0
//     when it has none (or a priority tag, whose VID is 0). The port carries
//     the VLANs in its trunks list, or every VLAN when the list is empty; a
//     frame in any other VLAN is dropped on the way in. A frame leaves it
//     tagged when its VLAN is not 0.
//   - access: the port carries exactly one VLAN, its tag. Untagged frames
//     belong to it; tagged ones (VID not 0) are dropped. Frames leave it
//     untagged.
//   - native-tagged: a trunk whose untagged frames belong to its tag (the
//     native VLAN). It always carries the native VLAN and never VLAN 0.
//   - native-untagged: the same, except that frames of the native VLAN
//     leave it untagged.
//
// With no mode, a port with a tag is an access port and one without is a
// trunk; a port with no VLAN configuration at all is a trunk of every VLAN,
// which forwards every frame as it arrived, as before VLANs existed.
//
// VLANs concern NORMAL only. OpenFlow rules match the frame as it arrived,
// tags included, and their output, FLOOD and ALL actions ignore VLAN
// configuration, as in OVS.

import (
	"fmt"
	"slices"
	"strings"

	"github.com/xswitch/xswitch/header"
)

// VLANMode is how a port treats VLAN tags (OVS's vlan_mode).
type VLANMode uint8

// The modes. VLANModeDefault picks access for a port with a tag and trunk
// for one without, as OVS does when vlan_mode is empty.
const (
	VLANModeDefault VLANMode = iota
	VLANModeAccess
	VLANModeTrunk
	VLANModeNativeTagged
	VLANModeNativeUntagged
)

var vlanModeNames = [...]string{
	VLANModeDefault:        "",
	VLANModeAccess:         "access",
	VLANModeTrunk:          "trunk",
	VLANModeNativeTagged:   "native-tagged",
	VLANModeNativeUntagged: "native-untagged",
}

func (m VLANMode) String() string {
	if int(m) < len(vlanModeNames) {
		return vlanModeNames[m]
	}
	return fmt.Sprintf("VLANMode(%d)", m)
}

// ParseVLANMode parses a mode's name; "" is VLANModeDefault.
func ParseVLANMode(s string) (VLANMode, error) {
	if i := slices.Index(vlanModeNames[:], s); i >= 0 {
		return VLANMode(i), nil
	}
	return 0, fmt.Errorf("VLAN mode %q is not one of access, trunk, native-tagged, native-untagged", s)
}

// MaxVLAN is the highest VLAN ID.
const MaxVLAN = 4095

// VLANConfig is a port's VLAN configuration. The zero value is a trunk of
// every VLAN.
type VLANConfig struct {
	Mode VLANMode
	// Tag is an access port's VLAN, or a native port's native VLAN; 0 means
	// none (an access port without one carries VLAN 0: untagged frames only).
	Tag uint16
	// Trunks are the VLANs a trunk or native port carries; empty means all.
	Trunks []uint16
}

// Resolved returns c with VLANModeDefault replaced by the mode it stands
// for.
func (c VLANConfig) Resolved() VLANConfig {
	if c.Mode == VLANModeDefault {
		c.Mode = VLANModeTrunk
		if c.Tag != 0 {
			c.Mode = VLANModeAccess
		}
	}
	return c
}

// Validate reports a configuration that OVS would refuse or silently
// ignore part of: a tag or trunk out of range, trunks on an access port,
// a tag on a trunk, a native mode without a native VLAN.
func (c VLANConfig) Validate() error {
	r := c.Resolved()
	if r.Mode > VLANModeNativeUntagged {
		return fmt.Errorf("unknown %v", r.Mode)
	}
	if c.Tag > MaxVLAN {
		return fmt.Errorf("VLAN tag %d out of range 0-%d", c.Tag, MaxVLAN)
	}
	for _, v := range c.Trunks {
		if v > MaxVLAN {
			return fmt.Errorf("trunk VLAN %d out of range 0-%d", v, MaxVLAN)
		}
	}
	switch r.Mode {
	case VLANModeAccess:
		if len(c.Trunks) > 0 {
			return fmt.Errorf("an access port carries only its tag: trunks %s are not allowed", FormatVLANs(c.Trunks))
		}
	case VLANModeTrunk:
		if c.Tag != 0 {
			return fmt.Errorf("a trunk port has no tag (%d): use vlan mode native-tagged or native-untagged for a native VLAN", c.Tag)
		}
	case VLANModeNativeTagged, VLANModeNativeUntagged:
		if c.Tag == 0 {
			return fmt.Errorf("vlan mode %s needs a tag: the native VLAN", r.Mode)
		}
	}
	return nil
}

// Ingress returns the VLAN that NORMAL puts a frame in when it arrives on
// a port so configured with tag VID vid (0: untagged or priority-tagged),
// or false when the port drops it. It is the forwarder's rule, for the
// control plane (trace); c must be valid.
func (c VLANConfig) Ingress(vid uint16) (uint16, bool) {
	v := compileVLAN(c)
	return v.ingress(vid & header.VLANVIDMask)
}

// Carries reports whether NORMAL sends frames of vlan out of a port so
// configured.
func (c VLANConfig) Carries(vlan uint16) bool {
	v := compileVLAN(c)
	return v.carries(vlan & header.VLANVIDMask)
}

// SetPortVLAN makes c the named port's VLAN configuration from the next
// batch on. What NORMAL decided under the old one is forgotten, in every
// thread's cache and in the fast path, and so are the addresses learned on
// the port, which may be in VLANs it no longer carries: Open vSwitch
// flushes them too when a port's VLAN configuration changes.
func (b *Bridge) SetPortVLAN(name string, c VLANConfig) error {
	if err := c.Validate(); err != nil {
		return fmt.Errorf("port %q: %w", name, err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	bp := b.port(name)
	if bp == nil {
		return fmt.Errorf("no port %q on bridge %s", name, b.name)
	}
	if b.fwds == nil {
		return fmt.Errorf("bridge %s is closed", b.name)
	}
	vlan := compileVLAN(c)
	b.whileForwardersHeld(func() {
		bp.vlan = vlan
		b.fwds[0].fdb.flushPort(bp.slot) // the threads share it
	}, (*forwarder).forgetDecisions)
	return nil
}

// FormatVLANs writes a VLAN list as "10,20,30".
func FormatVLANs(vlans []uint16) string {
	var b strings.Builder
	for i, v := range vlans {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprint(&b, v)
	}
	return b.String()
}

// portVLAN is a port's VLAN configuration compiled for the forwarder. Its
// zero value is a trunk of every VLAN.
type portVLAN struct {
	access      bool // untagged frames are in VLAN tag; tagged ones are dropped
	native      bool // untagged frames are in VLAN tag; tagged ones pass if carried
	untagNative bool // frames of VLAN tag leave untagged
	restricted  bool // only the VLANs in allowed are carried
	tag         uint16
	allowed     [(MaxVLAN + 1) / 64]uint64
}

func compileVLAN(c VLANConfig) portVLAN {
	c = c.Resolved()
	var v portVLAN
	switch c.Mode {
	case VLANModeAccess:
		v.access, v.restricted, v.tag = true, true, c.Tag
		v.allow(c.Tag)
	case VLANModeTrunk:
		v.restricted = len(c.Trunks) > 0
	case VLANModeNativeTagged, VLANModeNativeUntagged:
		v.native, v.tag = true, c.Tag
		v.untagNative = c.Mode == VLANModeNativeUntagged
		// A native port always carries its native VLAN and never VLAN 0,
		// whatever its trunks say (OVS's bundle_set).
		v.restricted = true
		if len(c.Trunks) == 0 {
			for i := range v.allowed {
				v.allowed[i] = ^uint64(0)
			}
		}
	}
	if !v.access {
		for _, t := range c.Trunks {
			v.allow(t)
		}
	}
	if v.native {
		v.allow(c.Tag)
		v.allowed[0] &^= 1
	}
	return v
}

func (v *portVLAN) allow(vlan uint16) { v.allowed[vlan/64] |= 1 << (vlan % 64) }

// carries reports whether frames of vlan may enter and leave the port.
func (v *portVLAN) carries(vlan uint16) bool {
	return !v.restricted || v.allowed[vlan/64]&(1<<(vlan%64)) != 0
}

// ingress returns the VLAN of a frame that arrived on the port with the
// given tag VID (0: untagged or priority-tagged), or false if the port does
// not accept it.
func (v *portVLAN) ingress(vid uint16) (uint16, bool) {
	if vid == 0 {
		if v.access || v.native {
			return v.tag, true
		}
		return 0, v.carries(0)
	}
	if v.access {
		return 0, false
	}
	return vid, v.carries(vid)
}

// egressUntagged reports whether frames of vlan leave the port without a
// tag.
func (v *portVLAN) egressUntagged(vlan uint16) bool {
	return v.access || (v.untagNative && vlan == v.tag)
}

// vlanFrame is one frame that NORMAL outputs, and the forms it takes on
// the way out: as it arrived, untagged, or tagged with its VLAN. A form is
// made the first time an output needs it, in a buffer of the copy pool, so
// that one frame makes at most two copies however many ports it leaves by.
type vlanFrame struct {
	arrived  []byte
	vlan     uint16
	tagged   bool   // arrived with a tag
	vid      uint16 // that tag's VID
	untagged []byte
	retagged []byte
}

// egressForm is the form a frame of NORMAL takes leaving a port.
type egressForm uint8

const (
	formAsArrived egressForm = iota
	formUntagged             // its tag popped
	formRetagged             // tagged with its VLAN: a tag pushed, or its VID set
)

// formOut is the form a frame of vlan, which arrived tagged with VID vid
// (or untagged), takes leaving a port of configuration out.
func formOut(out *portVLAN, vlan uint16, tagged bool, vid uint16) egressForm {
	if out.egressUntagged(vlan) {
		if !tagged {
			return formAsArrived
		}
		return formUntagged
	}
	// A trunk sends VLAN 0 as it came: untagged, or with its priority tag.
	if vlan == 0 || (tagged && vid == vlan) {
		return formAsArrived
	}
	return formRetagged
}

// formFor returns the frame as it must leave out, or nil if there was no
// buffer to make that form in.
func (f *forwarder) formFor(fr *vlanFrame, out *portVLAN) []byte {
	switch formOut(out, fr.vlan, fr.tagged, fr.vid) {
	case formAsArrived:
		return fr.arrived
	case formUntagged:
		if fr.untagged == nil {
			c := f.copies.clone(fr.arrived)
			if c == nil {
				return nil
			}
			fr.untagged = stripVLAN(c)
		}
		return fr.untagged
	}
	if fr.retagged == nil {
		c := f.copies.clone(fr.arrived)
		if c == nil {
			return nil
		}
		// A copy buffer has room for the tag, so this cannot fail.
		fr.retagged, _ = setVLANVID(c, fr.vlan)
	}
	return fr.retagged
}
