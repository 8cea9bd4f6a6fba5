package ovsdb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
)

// Change is one row's change in a Replica: Old is nil for a new row, New
// nil for a deleted one.
type Change struct {
	Table    string
	UUID     UUID
	Old, New Row
}

// Replica is a copy of some tables' rows, kept up to date by a monitor.
type Replica struct {
	schema *Schema

	mu       sync.RWMutex
	tables   map[string]map[UUID]Row
	onChange func([]Change)
	// Cond says whether the server took monitor_cond (update2), or only
	// monitor (update).
	Cond bool
}

var monitorIDs atomic.Uint64

// Monitor monitors the columns (all when the list is empty) of tables of
// db, whose schema is schema, into a new Replica. It asks monitor_cond and
// falls back to monitor when the server lacks it. onChange, unless nil, is
// told of each update's changes, the initial state included, in order, on
// the goroutine reading the connection: it must not wait for the client.
func (c *Client) Monitor(ctx context.Context, db string, schema *Schema, tables map[string][]string, onChange func([]Change)) (*Replica, error) {
	return c.monitor(ctx, db, schema, tables, onChange, "monitor_cond", "monitor")
}

// monitor monitors with the first of methods that the server knows.
func (c *Client) monitor(ctx context.Context, db string, schema *Schema, tables map[string][]string, onChange func([]Change), methods ...string) (*Replica, error) {
	r := &Replica{schema: schema, tables: map[string]map[UUID]Row{}, onChange: onChange}
	for name, cols := range tables {
		t := schema.Tables[name]
		if t == nil {
			return nil, fmt.Errorf("ovsdb: monitor: schema %s has no table %s", schema.Name, name)
		}
		for _, col := range cols {
			if t.Columns[col] == nil {
				return nil, fmt.Errorf("ovsdb: monitor: table %s has no column %s", name, col)
			}
		}
		r.tables[name] = map[UUID]Row{}
	}
	id := "m" + strconv.FormatUint(monitorIDs.Add(1), 10)
	idJSON, _ := json.Marshal(id)
	c.mu.Lock()
	c.monitors[string(idJSON)] = func(method string, params json.RawMessage) {
		// An update the replica cannot read means it no longer matches the
		// server: the connection fails, and its user starts again.
		if err := r.apply(method == "update2", params); err != nil {
			c.fail(err)
		}
	}
	c.mu.Unlock()

	requests := map[string]any{}
	for name, cols := range tables {
		req := map[string]any{}
		if len(cols) > 0 {
			req["columns"] = cols
		}
		requests[name] = []any{req}
	}
	var err error
	for _, method := range methods {
		update2 := method == "monitor_cond"
		err = c.call(ctx, method, []any{db, id, requests}, nil, func(res json.RawMessage) error {
			r.Cond = update2
			return r.apply(update2, res)
		})
		var rpc *RPCError
		if !errors.As(err, &rpc) || rpc.Err != "unknown method" {
			break
		}
	}
	if err != nil {
		c.mu.Lock()
		delete(c.monitors, string(idJSON))
		c.mu.Unlock()
		return nil, err
	}
	return r, nil
}

// apply applies table-updates (update2: table-updates2) to the replica.
func (r *Replica) apply(update2 bool, data json.RawMessage) error {
	var tables map[string]map[UUID]json.RawMessage
	if err := json.Unmarshal(data, &tables); err != nil {
		return fmt.Errorf("ovsdb: update: %w", err)
	}
	var changes []Change
	r.mu.Lock()
	for name, rows := range tables {
		t := r.schema.Tables[name]
		rs := r.tables[name]
		if t == nil || rs == nil {
			r.mu.Unlock()
			return fmt.Errorf("ovsdb: update of table %s, which is not monitored", name)
		}
		for uuid, raw := range rows {
			var ch Change
			var err error
			if update2 {
				ch, err = applyUpdate2(t, rs[uuid], raw)
			} else {
				ch, err = applyUpdate(t, raw)
			}
			if err != nil {
				r.mu.Unlock()
				return fmt.Errorf("ovsdb: update of %s row %s: %w", name, uuid, err)
			}
			ch.Table, ch.UUID = name, uuid
			if ch.New == nil {
				delete(rs, uuid)
			} else {
				rs[uuid] = ch.New
			}
			changes = append(changes, ch)
		}
	}
	r.mu.Unlock()
	if r.onChange != nil && len(changes) > 0 {
		r.onChange(changes)
	}
	return nil
}

// applyUpdate reads a row-update: {"old": row, "new": row}, old holding
// only the columns that changed.
func applyUpdate(t *Table, raw json.RawMessage) (Change, error) {
	var u struct {
		Old json.RawMessage `json:"old"`
		New json.RawMessage `json:"new"`
	}
	var ch Change
	if err := json.Unmarshal(raw, &u); err != nil {
		return ch, err
	}
	var err error
	if !isNull(u.Old) {
		if ch.Old, err = t.DecodeRow(u.Old); err != nil {
			return ch, err
		}
	}
	if !isNull(u.New) {
		if ch.New, err = t.DecodeRow(u.New); err != nil {
			return ch, err
		}
	}
	return ch, nil
}

// applyUpdate2 reads a row-update2: {"initial"|"insert"|"delete"|"modify": row},
// modify's row being each changed column's difference from old.
func applyUpdate2(t *Table, old Row, raw json.RawMessage) (Change, error) {
	var u map[string]json.RawMessage
	ch := Change{Old: old}
	if err := json.Unmarshal(raw, &u); err != nil {
		return ch, err
	}
	if len(u) != 1 {
		return ch, fmt.Errorf("row-update2 with %d members", len(u))
	}
	for kind, row := range u {
		switch kind {
		case "initial", "insert":
			n, err := t.DecodeRow(row)
			ch.New = n
			return ch, err
		case "delete":
			return ch, nil
		case "modify":
			if old == nil {
				return ch, errors.New("modify of a row the replica lacks")
			}
			diff, err := t.decodeDiff(row)
			if err != nil {
				return ch, err
			}
			ch.New = make(Row, len(old))
			for col, d := range old {
				ch.New[col] = d
			}
			for col, d := range diff {
				ch.New[col] = applyDiff(t.Columns[col].Type, old[col], d)
			}
			return ch, nil
		}
		return ch, fmt.Errorf("row-update2 of kind %q", kind)
	}
	return ch, nil
}

// applyDiff applies an update2 difference (RFC 7047's extension in
// ovsdb-server(7)): for a set of at most one element, the new value (an
// empty set when it is gone); for a larger set, the elements to add or
// remove; for a map, the keys to remove (same value), add or change.
func applyDiff(t *Type, old, diff any) any {
	switch d := diff.(type) {
	case Set:
		if t.Max == 1 {
			return d
		}
		o, _ := old.(Set)
		out := Set{}
		drop := map[any]bool{}
		for _, a := range d {
			drop[a] = true
		}
		for _, a := range o {
			if drop[a] {
				delete(drop, a)
				continue
			}
			out = append(out, a)
		}
		for _, a := range d {
			if drop[a] {
				out = append(out, a)
			}
		}
		return out
	case Map:
		o, _ := old.(Map)
		changes := map[any]any{}
		for _, p := range d {
			changes[p.Key] = p.Value
		}
		out := Map{}
		for _, p := range o {
			v, changed := changes[p.Key]
			switch {
			case !changed:
				out = append(out, p)
			case v != p.Value:
				out = append(out, Pair{p.Key, v})
			}
			delete(changes, p.Key)
		}
		for _, p := range d {
			if _, added := changes[p.Key]; added {
				out = append(out, p)
			}
		}
		return out
	}
	return diff
}

// Rows gives a copy of a table's rows by UUID.
func (r *Replica) Rows(table string) map[UUID]Row {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make(map[UUID]Row, len(r.tables[table]))
	for u, row := range r.tables[table] {
		out[u] = row
	}
	return out
}

// Row gives one row, or nil.
func (r *Replica) Row(table string, uuid UUID) Row {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.tables[table][uuid]
}

// Snapshot gives a copy of every monitored table's rows, by table and
// UUID, as of one moment: the rows one refers to are those of the same
// update.
func (r *Replica) Snapshot() map[string]map[UUID]Row {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make(map[string]map[UUID]Row, len(r.tables))
	for name, rows := range r.tables {
		out[name] = make(map[UUID]Row, len(rows))
		for u, row := range rows {
			out[name][u] = row
		}
	}
	return out
}
