package flow

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Groups, as OpenFlow 1.3 has them (OFPT_GROUP_MOD) and ovs-ofctl writes
// them (add-group, dump-groups):
//
//	group_id=1,type=select,bucket=weight:2,output:1,bucket=output:2
//
// A group is a list of buckets, each a list of actions, and a type that
// says which buckets a frame sent to the group takes: all of them (all),
// one chosen per flow (select), the only one (indirect), or the first
// whose watched port or group is live (ff, fast failover).

// GroupType is a group's type.
type GroupType uint8

const (
	GroupAll GroupType = iota
	GroupSelect
	GroupIndirect
	GroupFastFailover
)

// groupTypeNames are the types as ovs-ofctl prints them.
var groupTypeNames = [...]string{GroupAll: "all", GroupSelect: "select", GroupIndirect: "indirect", GroupFastFailover: "ff"}

func (t GroupType) String() string {
	if int(t) < len(groupTypeNames) {
		return groupTypeNames[t]
	}
	return fmt.Sprintf("type%d", uint8(t))
}

// Group numbers OpenFlow reserves: a group has a number up to GroupMax;
// GroupAllGroups names every group (del-groups), GroupAny none.
const (
	GroupMax       = 0xffffff00
	GroupAllGroups = 0xfffffffc
	GroupAny       = 0xffffffff
)

// PortAny is OFPP_ANY in OpenFlow's 32-bit port numbers: a bucket that
// watches no port.
const PortAny = 0xffffffff

// BucketMax is the largest bucket id (OFPG15_BUCKET_MAX).
const BucketMax = 0xffffff00

// Group is one group: its number, type, selection method and buckets.
type Group struct {
	ID   uint32
	Type GroupType
	// Selection is a select group's method: "" (the switch's default),
	// "hash" (by Fields, and Param as the hash's basis) or "dp_hash".
	Selection string
	Param     uint64
	Fields    []HashField
	Buckets   []Bucket
}

// HashField is a field a select group's hash reads, under Mask.
type HashField struct {
	Field *Field
	Mask  Value
}

// Bucket is one of a group's buckets.
type Bucket struct {
	ID uint32
	// Weight is a select group's bucket's share of the flows; 0 in
	// other groups.
	Weight uint16
	// WatchPort and WatchGroup say when a fast failover bucket is live:
	// while that port is up and that group has a live bucket (PortAny,
	// GroupAny: whatever they are).
	WatchPort  uint32
	WatchGroup uint32
	Actions    []Action
}

// ParseGroup parses a group as add-group takes it. Fields are separated
// by commas and/or whitespace; each "bucket=" starts a bucket, whose
// words are its actions but for weight:N, watch_port:P, watch_group:G and
// bucket_id:N, in any order; "actions=" may come before its actions. A
// bucket's actions are those of a flow less the instructions; their
// prerequisites are the flows' that send to the group. Buckets without
// an id take, in order, the lowest that no bucket names.
func ParseGroup(s string, ports PortNames) (Group, error) {
	head, buckets, hasBuckets := strings.Cut(s, "bucket=")
	g := Group{ID: GroupAny}
	hasType := false
	items, err := splitActionList(head)
	if err != nil {
		return Group{}, err
	}
	for _, item := range items {
		name, value, hasValue := strings.Cut(item, "=")
		if strings.HasPrefix(item, "fields(") {
			name, value, hasValue = "fields", strings.TrimSuffix(item[len("fields("):], ")"), true
		}
		if !hasValue {
			return Group{}, fmt.Errorf("group field %q needs a value (%s=VALUE)", name, name)
		}
		switch name {
		case "group_id":
			if g.ID, err = ParseGroupID(value); err != nil {
				return Group{}, err
			}
		case "type":
			if g.Type, err = groupTypeFromText(value); err != nil {
				return Group{}, err
			}
			hasType = true
		case "selection_method":
			if value != "hash" && value != "dp_hash" {
				return Group{}, fmt.Errorf("selection method %q: want hash or dp_hash", value)
			}
			g.Selection = value
		case "selection_method_param":
			if g.Param, err = numberFromText(name, value, math.MaxUint64); err != nil {
				return Group{}, err
			}
		case "fields":
			if g.Fields, err = hashFieldsFromText(value, ports); err != nil {
				return Group{}, err
			}
		default:
			return Group{}, fmt.Errorf("unknown group field %q", name)
		}
	}
	switch {
	case g.ID == GroupAny:
		return Group{}, errors.New("must specify a group_id")
	case !hasType:
		return Group{}, errors.New("must specify a type (all, select, indirect or ff)")
	case len(g.Fields) > 0 && g.Selection != "hash":
		return Group{}, errors.New(`fields may only be specified with "selection_method=hash"`)
	case (g.Selection != "" || g.Param != 0) && g.Type != GroupSelect:
		return Group{}, errors.New("only select groups have a selection method")
	}
	if hasBuckets {
		for _, text := range strings.Split(buckets, "bucket=") {
			b, err := parseBucket(strings.TrimRight(text, ", \t"), g.Type, ports)
			if err != nil {
				return Group{}, err
			}
			g.Buckets = append(g.Buckets, b)
		}
	}
	if g.Type == GroupIndirect && len(g.Buckets) > 1 {
		return Group{}, errors.New("an indirect group has at most one bucket")
	}
	return g, assignBucketIDs(g.Buckets)
}

// Where insert-buckets inserts and what remove-buckets removes, as
// OpenFlow 1.5's command_bucket_id names them, besides a bucket's id.
const (
	BucketFirst = 0xfffffffd // OFPG15_BUCKET_FIRST
	BucketLast  = 0xfffffffe // OFPG15_BUCKET_LAST
	BucketAll   = 0xffffffff // OFPG15_BUCKET_ALL
)

// ParseBucketCommand parses what insert-buckets and remove-buckets take,
// as ovs-ofctl writes it: "group_id=1,command_bucket_id=last,bucket=...".
// It returns the group's id, the command_bucket_id (first, last, all or a
// bucket's id; by default last for an insert, all for a removal), and the
// buckets to insert, read as buckets of the group's type; those without
// an id take the lowest that neither the group nor they have. group finds
// the group.
func ParseBucketCommand(s string, insert bool, group func(id uint32) (*Group, bool), ports PortNames) (id, where uint32, buckets []Bucket, err error) {
	head, bucketText, hasBuckets := strings.Cut(s, "bucket=")
	items, err := splitActionList(head)
	if err != nil {
		return 0, 0, nil, err
	}
	id, where = GroupAny, BucketAll
	if insert {
		where = BucketLast
	}
	for _, item := range items {
		name, value, _ := strings.Cut(item, "=")
		switch name {
		case "group_id":
			if id, err = ParseGroupID(value); err != nil {
				return 0, 0, nil, err
			}
		case "command_bucket_id":
			switch value {
			case "first":
				where = BucketFirst
			case "last":
				where = BucketLast
			case "all":
				where = BucketAll
			default:
				v, err := numberFromText(name, value, BucketMax)
				if err != nil {
					return 0, 0, nil, err
				}
				where = uint32(v)
			}
		default:
			return 0, 0, nil, fmt.Errorf("unknown field %q (want group_id, command_bucket_id and buckets)", name)
		}
	}
	if id == GroupAny {
		return 0, 0, nil, errors.New("must specify a group_id")
	}
	g, ok := group(id)
	switch {
	case !ok:
		return 0, 0, nil, fmt.Errorf("group %d does not exist", id)
	case insert && where == BucketAll:
		return 0, 0, nil, errors.New("command_bucket_id=all inserts nowhere: want first, last or a bucket's id")
	case insert && !hasBuckets:
		return 0, 0, nil, errors.New("insert-buckets needs buckets")
	case !insert && hasBuckets:
		return 0, 0, nil, errors.New("remove-buckets takes no buckets")
	}
	if !hasBuckets {
		return id, where, nil, nil
	}
	for _, text := range strings.Split(bucketText, "bucket=") {
		b, err := parseBucket(strings.TrimRight(text, ", \t"), g.Type, ports)
		if err != nil {
			return 0, 0, nil, err
		}
		buckets = append(buckets, b)
	}
	// Numbered with the group's, which keep theirs.
	all := append(slices.Clone(g.Buckets), buckets...)
	if err := assignBucketIDs(all); err != nil {
		return 0, 0, nil, err
	}
	return id, where, all[len(g.Buckets):], nil
}

// unassignedBucket marks a bucket whose text gave no id.
const unassignedBucket = math.MaxUint32

// parseBucket parses the text of one bucket of a group of type t.
func parseBucket(text string, t GroupType, ports PortNames) (Bucket, error) {
	b := Bucket{ID: unassignedBucket, WatchPort: PortAny, WatchGroup: GroupAny}
	if t == GroupSelect {
		b.Weight = 1
	}
	items, err := splitActionList(text)
	if err != nil {
		return Bucket{}, err
	}
	var actionItems []string
	hasActionsKey := false // actions= with nothing after it is none
	for _, item := range items {
		// OVS reads a key and its value either side of ':' or '=', the key
		// in any case.
		name, value := item, ""
		if i := strings.IndexAny(item, ":="); i >= 0 {
			name, value = item[:i], item[i+1:]
		}
		switch strings.ToLower(name) {
		case "weight":
			if t != GroupSelect {
				return Bucket{}, errors.New("only select groups have bucket weights")
			}
			w, err := numberFromText("weight", value, math.MaxUint16)
			if err != nil {
				return Bucket{}, err
			}
			b.Weight = uint16(w)
		case "watch_port":
			p, err := portFromText(value, ports)
			if err != nil {
				return Bucket{}, fmt.Errorf("watch_port: %w", err)
			}
			b.WatchPort = uint32(p)
		case "watch_group":
			id, err := numberFromText("watch_group", value, GroupMax)
			if err != nil {
				return Bucket{}, err
			}
			b.WatchGroup = uint32(id)
		case "bucket_id":
			id, err := numberFromText("bucket_id", value, BucketMax)
			if err != nil {
				return Bucket{}, err
			}
			b.ID = uint32(id)
		case "action", "actions":
			hasActionsKey = true
			if value != "" {
				actionItems = append(actionItems, value)
			}
		default:
			actionItems = append(actionItems, item)
		}
	}
	if len(actionItems) == 0 && !hasActionsKey {
		return Bucket{}, errors.New("a bucket must specify actions (actions=drop for none)")
	}
	if b.Actions, err = parseBucketActions(actionItems, ports); err != nil {
		return Bucket{}, fmt.Errorf("bucket: %w", err)
	}
	return b, nil
}

// parseBucketActions parses a bucket's actions, items of an action list.
func parseBucketActions(items []string, ports PortNames) ([]Action, error) {
	// The flows that send to the group meet the actions' prerequisites:
	// a bucket's actions are read as any flow's.
	var any Match
	var actions []Action
	for _, item := range items {
		name, arg, hasArg, err := splitAction(item)
		if err != nil {
			return nil, err
		}
		switch {
		case instructionRank[name] > 0 || name == "apply_actions" || name == "meter":
			return nil, fmt.Errorf("instruction %s is not allowed in a group's bucket", name)
		case strings.EqualFold(name, "drop"):
			if hasArg || len(items) > 1 {
				return nil, errors.New(`"drop" must be the only action, without an argument`)
			}
			return nil, nil
		}
		var as []Action
		if name == "set_field" && hasArg {
			as, _, err = setFieldAction(arg, SetFieldActionsOfAnyFrame)
		} else {
			as, _, err = parseAction(name, arg, hasArg, &any, ports)
		}
		if err != nil {
			return nil, err
		}
		actions = append(actions, as...)
	}
	return actions, nil
}

// assignBucketIDs gives each bucket without an id, in order, the lowest
// id that no bucket has, and refuses two buckets of one id.
func assignBucketIDs(buckets []Bucket) error {
	used := map[uint32]bool{}
	for _, b := range buckets {
		if b.ID == unassignedBucket {
			continue
		}
		if used[b.ID] {
			return fmt.Errorf("two buckets have bucket_id %d", b.ID)
		}
		used[b.ID] = true
	}
	next := uint32(0)
	for i := range buckets {
		if buckets[i].ID != unassignedBucket {
			continue
		}
		for used[next] {
			next++
		}
		buckets[i].ID = next
		used[next] = true
	}
	return nil
}

// ParseGroupID reads a group id as ovs-ofctl writes one: a number up to
// GroupMax, "all" (GroupAllGroups) or "any" (GroupAny).
func ParseGroupID(text string) (uint32, error) {
	switch strings.ToLower(text) {
	case "all":
		return GroupAllGroups, nil
	case "any":
		return GroupAny, nil
	}
	v, isNumber, fits := scanUint(text)
	switch {
	case !isNumber:
		return 0, fmt.Errorf("invalid group id %q", text)
	case !fits || v > GroupMax:
		return 0, fmt.Errorf("group id %s out of range (0-%d)", text, uint32(GroupMax))
	}
	return uint32(v), nil
}

func groupTypeFromText(text string) (GroupType, error) {
	if text == "fast_failover" {
		return GroupFastFailover, nil
	}
	for t, name := range groupTypeNames {
		if name == text {
			return GroupType(t), nil
		}
	}
	return 0, fmt.Errorf("invalid group type %q: want all, select, indirect or ff", text)
}

// hashFieldsFromText reads the fields of fields(…): names, each with an
// optional =MASK.
func hashFieldsFromText(text string, ports PortNames) ([]HashField, error) {
	var out []HashField
	for _, item := range strings.FieldsFunc(text, func(r rune) bool { return r < 0x80 && isFieldSeparator(byte(r)) }) {
		name, maskText, hasMask := strings.Cut(item, "=")
		f, ok := fieldsByName[name]
		if !ok || isWireName(name) {
			return nil, fmt.Errorf("fields: unknown field %q", name)
		}
		h := HashField{Field: f, Mask: f.full()}
		if hasMask {
			m, _, err := f.parseValue(maskText, ports)
			if err != nil {
				return nil, fmt.Errorf("fields: %s's mask: %w", name, err)
			}
			h.Mask = m
		}
		out = append(out, h)
	}
	return out, nil
}

// FormatGroup writes g as ovs-ofctl prints it (with OpenFlow 1.5, which
// says everything a group holds), less the bucket ids that are a bucket's
// place in the list, so that ParseGroup(FormatGroup(g)) is g.
func FormatGroup(g Group) string {
	var b strings.Builder
	b.WriteString("group_id=")
	b.WriteString(strconv.FormatUint(uint64(g.ID), 10))
	b.WriteString(",type=")
	b.WriteString(g.Type.String())
	if g.Selection != "" {
		b.WriteString(",selection_method=")
		b.WriteString(g.Selection)
	}
	if g.Param != 0 {
		fmt.Fprintf(&b, ",selection_method_param=%d", g.Param)
	}
	if len(g.Fields) > 0 {
		b.WriteString(",fields(")
		for i, h := range g.Fields {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(h.Field.Name)
			if h.Mask != h.Field.full() {
				b.WriteByte('=')
				b.WriteString(h.Field.formatValue(h.Mask, h.Field.full()))
			}
		}
		b.WriteByte(')')
	}
	// Ids in order from 0 are what parsing gives buckets without one;
	// any other id needs all of them written, as parsing fills the gaps.
	inOrder := true
	for i, bk := range g.Buckets {
		inOrder = inOrder && bk.ID == uint32(i)
	}
	for _, bk := range g.Buckets {
		b.WriteString(",bucket=")
		if !inOrder {
			fmt.Fprintf(&b, "bucket_id:%d,", bk.ID)
		}
		if g.Type == GroupSelect && bk.Weight != 1 {
			fmt.Fprintf(&b, "weight:%d,", bk.Weight)
		}
		if bk.WatchPort != PortAny {
			fmt.Fprintf(&b, "watch_port:%s,", portText(uint16(bk.WatchPort)))
		}
		if bk.WatchGroup != GroupAny {
			fmt.Fprintf(&b, "watch_group:%d,", bk.WatchGroup)
		}
		b.WriteString("actions=")
		b.WriteString(FormatActions(bk.Actions))
	}
	return b.String()
}
