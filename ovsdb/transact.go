package ovsdb

import (
	"context"
	"encoding/json"
	"fmt"
)

// Op is one operation of a transaction (RFC 7047 section 5.2), made by
// Insert, Update, Mutate, Delete, Select, Wait or Comment. A row's values
// are datums: atoms, Set, Map, UUID or NamedUUID.
type Op map[string]any

// Condition is [column, function, value] of a where clause.
type Condition []any

// Mutation is [column, mutator, value] of a mutate.
type Mutation []any

// Cond is the condition column function value, such as Cond("name", "==", "br0").
func Cond(column, function string, value any) Condition {
	return Condition{column, function, value}
}

// Mut is the mutation column mutator value, such as
// Mut("bridges", "insert", Set{NamedUUID("br")}).
func Mut(column, mutator string, value any) Mutation {
	return Mutation{column, mutator, value}
}

func where(conds []Condition) []Condition {
	if conds == nil {
		return []Condition{}
	}
	return conds
}

// Insert inserts row into table; uuidName, unless "", names the new row
// for the rest of the transaction (NamedUUID(uuidName)).
func Insert(table string, row map[string]any, uuidName string) Op {
	if row == nil {
		row = map[string]any{} // all columns their defaults
	}
	op := Op{"op": "insert", "table": table, "row": row}
	if uuidName != "" {
		op["uuid-name"] = uuidName
	}
	return op
}

// Update sets columns of the rows that match all conds.
func Update(table string, row map[string]any, conds ...Condition) Op {
	return Op{"op": "update", "table": table, "row": row, "where": where(conds)}
}

// Mutate changes columns of the rows that match all conds.
func Mutate(table string, mutations []Mutation, conds ...Condition) Op {
	return Op{"op": "mutate", "table": table, "mutations": mutations, "where": where(conds)}
}

// Delete deletes the rows that match all conds.
func Delete(table string, conds ...Condition) Op {
	return Op{"op": "delete", "table": table, "where": where(conds)}
}

// Select reads columns (all when none) of the rows that match all conds.
func Select(table string, columns []string, conds ...Condition) Op {
	op := Op{"op": "select", "table": table, "where": where(conds)}
	if columns != nil {
		op["columns"] = columns
	}
	return op
}

// Wait waits until (until "==") or while (until "!=") the columns of the
// rows matching conds are rows, for at most timeoutMs milliseconds (<0:
// as long as it takes).
func Wait(table string, conds []Condition, columns []string, until string, rows []map[string]any, timeoutMs int) Op {
	if rows == nil {
		rows = []map[string]any{}
	}
	if columns == nil {
		columns = []string{}
	}
	op := Op{"op": "wait", "table": table, "where": where(conds), "columns": columns, "until": until, "rows": rows}
	if timeoutMs >= 0 {
		op["timeout"] = timeoutMs
	}
	return op
}

// Assert fails the transaction unless this client holds the lock, so that
// a daemon that lost its lock writes nothing.
func Assert(lock string) Op { return Op{"op": "assert", "lock": lock} }

// Comment writes text in the database's log.
func Comment(text string) Op { return Op{"op": "comment", "comment": text} }

// Result is one operation's result.
type Result struct {
	Count int                          `json:"count"` // update, mutate, delete
	UUID  UUID                         `json:"-"`     // insert
	Rows  []map[string]json.RawMessage `json:"rows"`  // select
}

// OpError is a transaction's failure, naming the operation that failed.
type OpError struct {
	Index  int    // in the transaction; len(ops) for a failure at commit
	Op     string // insert, wait, ...; "commit" at commit
	Table  string
	Err    string // RFC 7047's error, such as "timed out" or "constraint violation"
	Detail string
}

func (e *OpError) Error() string {
	s := fmt.Sprintf("ovsdb: transact: operation %d (%s", e.Index, e.Op)
	if e.Table != "" {
		s += " on " + e.Table
	}
	s += "): " + e.Err
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

// Transact runs ops as one transaction on db. When one fails (nothing is
// then committed), the error is an *OpError naming it.
func (c *Client) Transact(ctx context.Context, db string, ops ...Op) ([]Result, error) {
	params := make([]any, 0, len(ops)+1)
	params = append(params, db)
	for _, op := range ops {
		params = append(params, op)
	}
	var raw []json.RawMessage
	if err := c.Call(ctx, "transact", params, &raw); err != nil {
		return nil, err
	}
	results := make([]Result, len(ops))
	for i, r := range raw {
		if isNull(r) {
			continue
		}
		var e struct {
			Error   string `json:"error"`
			Details string `json:"details"`
			UUID    []any  `json:"uuid"`
		}
		if err := json.Unmarshal(r, &e); err != nil {
			return nil, fmt.Errorf("ovsdb: transact: result %d: %w", i, err)
		}
		if e.Error != "" {
			oe := &OpError{Index: i, Op: "commit", Err: e.Error, Detail: e.Details}
			if i < len(ops) {
				oe.Op, _ = ops[i]["op"].(string)
				oe.Table, _ = ops[i]["table"].(string)
			}
			return nil, oe
		}
		if i >= len(ops) {
			continue
		}
		if err := json.Unmarshal(r, &results[i]); err != nil {
			return nil, fmt.Errorf("ovsdb: transact: result %d: %w", i, err)
		}
		if len(e.UUID) == 2 {
			u, err := atomFromJSON(e.UUID)
			if err != nil {
				return nil, fmt.Errorf("ovsdb: transact: result %d: %w", i, err)
			}
			results[i].UUID, _ = u.(UUID)
		}
	}
	return results, nil
}
