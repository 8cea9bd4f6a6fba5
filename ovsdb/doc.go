// Package ovsdb is a small client of the Open vSwitch Database Management
// Protocol (RFC 7047), enough for a switch daemon to sit behind a real
// ovsdb-server as ovs-vswitchd does.
//
// It has three parts:
//
//   - The data model (datum.go): atoms (int64, float64, bool, string, UUID,
//     NamedUUID) and datums (Set, Map) with RFC 7047's JSON encoding both ways.
//   - The schema (schema.go): a parsed .ovsschema file whose column types
//     decode a row's JSON into typed values that Row's accessors read
//     (Row.StringMap, Row.OptInt, Row.UUIDs, ...).
//   - The JSON-RPC client (client.go, transact.go, replica.go): list_dbs,
//     get_schema, transact, monitor and monitor_cond, lock, steal and unlock
//     with their locked and stolen notifications, cancel, answering the
//     server's echo; and a Replica, the tables a monitor keeps up to date,
//     with a change callback.
//
// A Client is one connection: when it drops, Done is closed and Err says why.
// Reconnecting (with backoff) and monitoring again is the caller's job; a new
// Replica from a new monitor's initial state is the resynchronization.
//
// Left out of RFC 7047 and its OVS extensions: monitor_cond_since and
// update3 (the caller resynchronizes from a full initial state instead),
// monitor_cancel and monitor_cond_change, ovsdb-server's clustered
// databases and transaction history, SSL remotes (ssl:, pssl:), passive
// remotes (punix:, ptcp:), and checking the constraints (refTable, min/max
// integer and string length) that the server itself enforces on writes.
package ovsdb
