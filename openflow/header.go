package openflow

import (
	"encoding/binary"
	"fmt"
)

// Version is OpenFlow 1.3's protocol version.
const Version = 0x04

// Type is a message's type (ofp_type).
type Type uint8

// The OpenFlow 1.3 message types.
const (
	TypeHello                 Type = 0
	TypeError                 Type = 1
	TypeEchoRequest           Type = 2
	TypeEchoReply             Type = 3
	TypeExperimenter          Type = 4
	TypeFeaturesRequest       Type = 5
	TypeFeaturesReply         Type = 6
	TypeGetConfigRequest      Type = 7
	TypeGetConfigReply        Type = 8
	TypeSetConfig             Type = 9
	TypePacketIn              Type = 10
	TypeFlowRemoved           Type = 11
	TypePortStatus            Type = 12
	TypePacketOut             Type = 13
	TypeFlowMod               Type = 14
	TypeGroupMod              Type = 15
	TypePortMod               Type = 16
	TypeTableMod              Type = 17
	TypeMultipartRequest      Type = 18
	TypeMultipartReply        Type = 19
	TypeBarrierRequest        Type = 20
	TypeBarrierReply          Type = 21
	TypeQueueGetConfigRequest Type = 22
	TypeQueueGetConfigReply   Type = 23
	TypeRoleRequest           Type = 24
	TypeRoleReply             Type = 25
	TypeGetAsyncRequest       Type = 26
	TypeGetAsyncReply         Type = 27
	TypeSetAsync              Type = 28
	TypeMeterMod              Type = 29
)

var typeNames = [...]string{
	"HELLO", "ERROR", "ECHO_REQUEST", "ECHO_REPLY", "EXPERIMENTER",
	"FEATURES_REQUEST", "FEATURES_REPLY", "GET_CONFIG_REQUEST", "GET_CONFIG_REPLY", "SET_CONFIG",
	"PACKET_IN", "FLOW_REMOVED", "PORT_STATUS", "PACKET_OUT", "FLOW_MOD",
	"GROUP_MOD", "PORT_MOD", "TABLE_MOD", "MULTIPART_REQUEST", "MULTIPART_REPLY",
	"BARRIER_REQUEST", "BARRIER_REPLY", "QUEUE_GET_CONFIG_REQUEST", "QUEUE_GET_CONFIG_REPLY", "ROLE_REQUEST",
	"ROLE_REPLY", "GET_ASYNC_REQUEST", "GET_ASYNC_REPLY", "SET_ASYNC", "METER_MOD",
}

// String is the type's name in the specification, without OFPT_.
func (t Type) String() string {
	if int(t) < len(typeNames) {
		return typeNames[t]
	}
	return fmt.Sprintf("Type(%d)", uint8(t))
}

// HeaderLen is the length of ofp_header, which starts every message.
const HeaderLen = 8

// Header is ofp_header.
type Header struct {
	Version uint8
	Type    Type
	Length  uint16 // of the whole message, header included
	Xid     uint32
}

// ParseHeader decodes the header at the start of b. It checks only that
// b holds one; Decode checks the rest.
func ParseHeader(b []byte) (Header, error) {
	if len(b) < HeaderLen {
		return Header{}, errorf(ErrBadRequest, BadRequestBadLen, "header: %d of %d bytes", len(b), HeaderLen)
	}
	return Header{
		Version: b[0],
		Type:    Type(b[1]),
		Length:  binary.BigEndian.Uint16(b[2:]),
		Xid:     binary.BigEndian.Uint32(b[4:]),
	}, nil
}

// pad8 rounds n up to a multiple of 8: the structures inside messages
// are padded to 8 bytes.
func pad8(n int) int { return (n + 7) &^ 7 }

// appendPad8 appends the zeros that pad a structure of length n to 8
// bytes.
func appendPad8(b []byte, n int) []byte {
	return append(b, make([]byte, pad8(n)-n)...)
}
