// Package openflow is the OpenFlow 1.3 wire protocol (version 0x04), as
// the OpenFlow Switch Specification 1.3.5 defines it, with the Nicira
// extensions Open vSwitch's tools send: messages as Go values, their
// encoding and decoding, and nothing of the switch. Decoding faces the
// network: it checks every length against the bytes it has and answers
// a malformed message with the error the specification names for it
// (a *DecodeError), never a panic.
package openflow
