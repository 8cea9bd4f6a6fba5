package flow

import (
	"errors"
	"slices"
	"testing"
	"time"
)

var now = time.Unix(1700000000, 0)

func group(t *testing.T, text string) Group {
	t.Helper()
	g, err := ParseGroup(text, nil)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// wantGroupModError checks that err is a GroupModError of code.
func wantGroupModError(t *testing.T, what string, err error, code GroupModCode) {
	t.Helper()
	var gm *GroupModError
	if !errors.As(err, &gm) || gm.Code != code {
		t.Errorf("%s: %v; want a group mod error of code %d", what, err, code)
	}
}

// The table refuses what OpenFlow says a group table refuses, with its
// codes, and leaves the table it was asked to change as it was.
func TestGroupTableRefusals(t *testing.T) {
	t0 := NewGroupTable()
	t1, err := t0.Add(group(t, "group_id=1,type=all,bucket=output:1"), now)
	if err != nil {
		t.Fatal(err)
	}
	_, err = t1.Add(group(t, "group_id=1,type=all,bucket=output:2"), now)
	wantGroupModError(t, "an id taken", err, GroupExists)
	_, err = t1.Add(group(t, "group_id=all,type=all"), now)
	wantGroupModError(t, "a reserved id", err, GroupInvalid)
	_, err = t1.Modify(group(t, "group_id=2,type=all,bucket=output:2"), now)
	wantGroupModError(t, "modifying a group that is not there", err, GroupUnknown)
	_, err = t1.Add(group(t, "group_id=2,type=all,bucket=group:3"), now)
	wantGroupModError(t, "a chain to a group that is not there", err, GroupUnknown)
	_, err = t1.Add(group(t, "group_id=2,type=ff,bucket=watch_group:3,output:1"), now)
	wantGroupModError(t, "watching a group that is not there", err, GroupBadWatch)
	t2, err := t1.Add(group(t, "group_id=2,type=indirect,bucket=group:1"), now)
	if err != nil {
		t.Fatal(err)
	}
	_, err = t2.Modify(group(t, "group_id=1,type=all,bucket=output:1,bucket=group:2"), now)
	wantGroupModError(t, "a loop through two groups", err, GroupLoop)
	_, err = t2.Modify(group(t, "group_id=2,type=indirect,bucket=group:2"), now)
	wantGroupModError(t, "a group forwarding to itself", err, GroupLoop)
	_, _, err = t2.Delete(1)
	wantGroupModError(t, "deleting a group another forwards to", err, GroupChained)
	if t0.Len() != 0 || t1.Len() != 1 || t2.Len() != 2 {
		t.Errorf("tables of %d, %d, %d groups; a change changed the table it started from", t0.Len(), t1.Len(), t2.Len())
	}
}

// Delete removes one group, or every group, and says which; a group that
// is not there is no error.
func TestGroupTableDelete(t *testing.T) {
	t1, _ := NewGroupTable().Add(group(t, "group_id=1,type=all,bucket=output:1"), now)
	t2, _ := t1.Add(group(t, "group_id=5,type=indirect,bucket=group:1"), now)
	t3, removed, err := t2.Delete(5)
	if err != nil || !slices.Equal(removed, []uint32{5}) || t3.Len() != 1 {
		t.Errorf("deleting 5: removed %v, %d left, %v; want [5], 1", removed, t3.Len(), err)
	}
	same, removed, err := t3.Delete(9)
	if err != nil || removed != nil || same != t3 {
		t.Errorf("deleting a group that is not there: removed %v, %v", removed, err)
	}
	empty, removed, err := t2.Delete(GroupAllGroups)
	if err != nil || !slices.Equal(removed, []uint32{1, 5}) || empty.Len() != 0 {
		t.Errorf("deleting all: removed %v, %d left, %v; want [1 5], none", removed, empty.Len(), err)
	}
	if ids := []uint32{t2.Groups()[0].ID, t2.Groups()[1].ID}; !slices.Equal(ids, []uint32{1, 5}) {
		t.Errorf("Groups lists %v; want [1 5]", ids)
	}
}
