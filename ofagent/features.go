package ofagent

import (
	"fmt"
	"sync"

	"github.com/xswitch/xswitch/flow"
	"github.com/xswitch/xswitch/openflow"
)

// tableMaxEntries is what TABLE_FEATURES says a table holds: the
// classifier has no fixed limit, so this is Open vSwitch's default
// flow-limit, a number a controller can plan with.
const tableMaxEntries = 1000000

// actionTypes are the OpenFlow actions xswitch has, in rules and in
// groups' buckets.
var actionTypes = []openflow.ActionType{
	openflow.ActionTypeOutput, openflow.ActionTypePushVLAN, openflow.ActionTypePopVLAN, openflow.ActionTypeGroup,
	openflow.ActionTypeSetNwTTL, openflow.ActionTypeDecNwTTL, openflow.ActionTypeSetField, openflow.ActionTypeExperimenter,
}

// tableFeatures describes every table, as OFPMP_TABLE_FEATURES asks:
// what xswitch can match, write and do in it. Worked out once: it changes
// only with the code.
var tableFeatures = sync.OnceValue(func() []openflow.TableFeatures {
	var match, wildcards, setfield []uint32
	for _, f := range flow.Fields() {
		if len(f.OXM) == 0 {
			continue
		}
		code := f.OXM[0]
		value := make([]byte, code.Bytes)
		header := openflow.OXM{Class: code.Class, Field: code.Num, Value: value}.Header()
		if f.Maskable {
			// The spec's way to say a field takes a mask: its id with hasmask.
			match = append(match, openflow.OXM{Class: code.Class, Field: code.Num, Value: value, Mask: value}.Header())
		} else {
			match = append(match, header)
		}
		wildcards = append(wildcards, header)
		if f.Writable {
			setfield = append(setfield, header)
		}
	}
	instructions := []uint16{
		uint16(openflow.InstructionTypeGotoTable), uint16(openflow.InstructionTypeWriteMetadata),
		uint16(openflow.InstructionTypeWriteActions), uint16(openflow.InstructionTypeApplyActions),
		uint16(openflow.InstructionTypeClearActions), uint16(openflow.InstructionTypeMeter),
	}
	var actions []uint16
	for _, t := range actionTypes {
		actions = append(actions, uint16(t))
	}
	out := make([]openflow.TableFeatures, flow.NumTables)
	for t := range out {
		var next []uint8
		for n := t + 1; n < flow.NumTables; n++ {
			next = append(next, uint8(n))
		}
		inst := instructions
		if len(next) == 0 {
			inst = instructions[1:] // the last table has no goto_table
		}
		var props []openflow.TableFeatureProp
		for _, miss := range []bool{false, true} {
			offset := uint16(0)
			if miss {
				offset = 1 // each _MISS property follows its own
			}
			props = append(props,
				openflow.TableFeatureProp{Type: openflow.TableFeatureInstructions + offset, InstructionIDs: inst},
				openflow.TableFeatureProp{Type: openflow.TableFeatureNextTables + offset, NextTables: next},
				openflow.TableFeatureProp{Type: openflow.TableFeatureWriteActions + offset, ActionIDs: actions},
				openflow.TableFeatureProp{Type: openflow.TableFeatureApplyActions + offset, ActionIDs: actions},
				openflow.TableFeatureProp{Type: openflow.TableFeatureWriteSetfield + offset, OXMIDs: setfield},
				openflow.TableFeatureProp{Type: openflow.TableFeatureApplySetfield + offset, OXMIDs: setfield},
			)
		}
		props = append(props,
			openflow.TableFeatureProp{Type: openflow.TableFeatureMatch, OXMIDs: match},
			openflow.TableFeatureProp{Type: openflow.TableFeatureWildcards, OXMIDs: wildcards})
		out[t] = openflow.TableFeatures{
			TableID: uint8(t), Name: fmt.Sprintf("table%d", t), MetadataMatch: ^uint64(0), MetadataWrite: ^uint64(0),
			MaxEntries: tableMaxEntries, Properties: props,
		}
	}
	return out
})
